import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { catalogFileModel } from '../support/catalog-file-model'
import { createTempDir } from '../support/databases'
import { ControlledStream, doneFrame, sseFrame, startFakeUpstream, upstreamChunk, upstreamUsageChunk, type FakeUpstream } from '../support/fake-upstream'
import { useGateway } from '../support/gateway-process'
import { demoCatalogPath } from '../support/test-app'
import { waitFor } from '../support/wait-for'
import { rawExchange } from './raw-http'

// Past the 256 requests Bun's fetch sends at once unless BUN_CONFIG_MAX_HTTP_REQUESTS is set when
// the process starts: streams past that many would wait inside the gateway for one to end.
const requestCount = 300
// Within each key's edge allowance (100 a second, 400 at once).
const keyCount = 4
const heldModel = 'e2e/held-upstream'

let upstream: FakeUpstream
let catalogDir: ReturnType<typeof createTempDir>
let releaseAll: () => void = () => {}
const released = new Promise<void>((resolve) => (releaseAll = resolve))
let open = 0

beforeAll(async () => {
  // Opens every stream at once and sends its tokens when the test lets them all go.
  upstream = startFakeUpstream((request) => {
    if (request.method === 'GET') return Response.json({ object: 'list', data: [] })
    open++
    const stream = new ControlledStream()
    void released.then(() => {
      for (const frame of [sseFrame(upstreamChunk({ content: 'go', role: true })), sseFrame(upstreamUsageChunk(3, 1)), doneFrame]) stream.send(frame)
      stream.close()
    })
    return stream.response()
  })
  catalogDir = createTempDir('e2e-catalog')
  const demo = (await Bun.file(demoCatalogPath).json()) as { models: unknown[] }
  const model = catalogFileModel({
    id: heldModel,
    owned_by: 'e2e (fake upstream)',
    published: '2025-01-01',
    deployments: [{ provider: 'openai-compatible', base_url: upstream.baseUrl, upstream_model: 'held-upstream' }],
  })
  await Bun.write(join(catalogDir.path, 'catalog.json'), JSON.stringify({ models: [...demo.models, model] }))
})

const gateway = useGateway(() => ({ database: 'pglite', catalogPath: join(catalogDir.path, 'catalog.json'), viaStartScript: true }))

afterAll(() => {
  releaseAll()
  upstream?.stop()
  catalogDir?.remove()
})

test(`started as README says, the gateway has ${requestCount} streams open to the upstream at once, and relays them all`, async () => {
  const keys = await Promise.all(Array.from({ length: keyCount }, () => gateway.current.createApiKey()))
  const body = JSON.stringify({ model: heldModel, messages: [{ role: 'user', content: 'Hold on' }], stream: true })
  const { hostname, port } = gateway.current
  // Raw sockets: the test's own fetch would send at most 256 at once.
  const answers = Array.from({ length: requestCount }, (_, index) =>
    rawExchange({
      hostname,
      port,
      head: [
        'POST /v1/chat/completions HTTP/1.1',
        `Host: ${hostname}:${port}`,
        `Authorization: Bearer ${keys[index % keyCount]}`,
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
      ].join('\r\n'),
      body: [new TextEncoder().encode(body)],
      timeoutMs: 30_000,
    }),
  )

  await waitFor(() => open === requestCount, { timeoutMs: 20_000, what: `${requestCount} streams open at the upstream at once` }).catch((error: Error) => {
    throw new Error(`${error.message}: ${open} opened`)
  })
  releaseAll()
  const streams = await Promise.all(answers)

  const relayed = (stream: (typeof streams)[number]) => stream.status === 200 && stream.body.includes('"go"') && stream.body.endsWith('data: [DONE]\n\n')
  expect(streams.filter((stream) => !relayed(stream)).map((stream) => `${stream.status} ${stream.body.slice(0, 200)}`)).toEqual([])
  expect(gateway.current.output()).not.toContain('at most 256 upstream requests')
}, 60_000)
