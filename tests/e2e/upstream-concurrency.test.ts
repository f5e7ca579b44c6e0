import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { catalogFileModel } from '../support/catalog-file-model'
import { createTempDir } from '../support/databases'
import { ControlledStream, doneFrame, sseFrame, startFakeUpstream, upstreamChunk, upstreamUsageChunk } from '../support/fake-upstream'
import { startGateway, type GatewayOptions, type RunningGateway } from '../support/gateway-process'
import { demoCatalogPath } from '../support/test-app'
import { waitFor } from '../support/wait-for'
import { rawExchange, type RawResponse } from './raw-http'

// Bun's fetch sends at most BUN_CONFIG_MAX_HTTP_REQUESTS requests at once, 256 unless it is set
// when the process starts, and holds the rest without a word.
const heldModel = 'e2e/held-upstream'
// Within each key's edge allowance (100 a second, 400 at once).
const keyCount = 4

const temp = createTempDir('e2e-upstream-concurrency')
const cleanUps: Array<() => unknown> = []
afterAll(async () => {
  for (const cleanUp of cleanUps.reverse()) await cleanUp()
  temp.remove()
})

/**
 * A fake upstream that opens every stream at once and sends its tokens when the test lets them all
 * go, and a gateway (started with `options`) whose catalog has a model on it (with `fields` added to
 * the catalog file and to the model's deployment).
 */
async function gatewayOnHeldUpstream(name: string, options: Omit<GatewayOptions, 'catalogPath'>, fields: { catalog?: Record<string, unknown>; deployment?: Record<string, unknown> } = {}) {
  let releaseAll: () => void = () => {}
  const released = new Promise<void>((resolve) => (releaseAll = resolve))
  let open = 0
  let probed = 0
  const upstream = startFakeUpstream((request) => {
    if (request.method === 'GET') {
      probed++
      return Response.json({ object: 'list', data: [] })
    }
    open++
    const stream = new ControlledStream()
    void released.then(() => {
      for (const frame of [sseFrame(upstreamChunk({ content: 'go', role: true })), sseFrame(upstreamUsageChunk(3, 1)), doneFrame]) stream.send(frame)
      stream.close()
    })
    return stream.response()
  })
  cleanUps.push(() => upstream.stop())
  const demo = (await Bun.file(demoCatalogPath).json()) as { models: unknown[] }
  const model = catalogFileModel({
    id: heldModel,
    owned_by: 'e2e (fake upstream)',
    published: '2025-01-01',
    deployments: [{ provider: 'openai-compatible', base_url: upstream.baseUrl, upstream_model: 'held-upstream', ...fields.deployment }],
  })
  const catalogPath = join(temp.path, `${name}.json`)
  await Bun.write(catalogPath, JSON.stringify({ ...fields.catalog, models: [...demo.models, model] }))
  const gateway = await startGateway({ ...options, catalogPath })
  // Cleaned up in reverse: the held streams are let go before the gateway is asked to stop.
  cleanUps.push(() => gateway.stop(), releaseAll)
  const keys = await Promise.all(Array.from({ length: keyCount }, () => gateway.createApiKey()))
  return { gateway, keys, opened: () => open, probed: () => probed, releaseAll }
}

/** Streamed chat requests on raw sockets: the test's own fetch would send at most 256 at once. */
function openStreams(gateway: RunningGateway, keys: string[], count: number): Array<Promise<RawResponse>> {
  const body = JSON.stringify({ model: heldModel, messages: [{ role: 'user', content: 'Hold on' }], stream: true })
  const { hostname, port } = gateway
  return Array.from({ length: count }, (_, index) =>
    rawExchange({
      hostname,
      port,
      head: [
        'POST /v1/chat/completions HTTP/1.1',
        `Host: ${hostname}:${port}`,
        `Authorization: Bearer ${keys[index % keys.length]}`,
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
      ].join('\r\n'),
      body: [new TextEncoder().encode(body)],
      timeoutMs: 30_000,
    }),
  )
}

const relayed = (stream: RawResponse) => stream.status === 200 && stream.body.includes('"go"') && stream.body.endsWith('data: [DONE]\n\n')
const summary = (stream: RawResponse) => `${stream.status} ${stream.body.slice(0, 200)}`

test('started as README says, the gateway has 300 streams open to the upstream at once, and relays them all', async () => {
  const { gateway, keys, opened, releaseAll } = await gatewayOnHeldUpstream('start-script', { database: 'pglite', viaStartScript: true })

  const answers = openStreams(gateway, keys, 300)
  await waitFor(() => opened() === 300, { timeoutMs: 20_000, what: '300 streams open at the upstream at once' }).catch((error: Error) => {
    throw new Error(`${error.message}: ${opened()} opened`)
  })
  releaseAll()
  const streams = await Promise.all(answers)

  expect(streams.filter((stream) => !relayed(stream)).map(summary)).toEqual([])
  expect(gateway.output()).not.toContain('at most 256 upstream requests')
}, 60_000)

test('past its share of the requests fetch may send at once, the gateway answers 503 engine_unavailable at once, and probes keep a place of their own', async () => {
  // 20 places: 19 for calls, 1 for health probes, which run every 200 ms within a 1 s connect timeout.
  const { gateway, keys, opened, probed, releaseAll } = await gatewayOnHeldUpstream('limit-20', { database: 'pglite', env: { BUN_CONFIG_MAX_HTTP_REQUESTS: '20' } }, {
    catalog: { health_probes: { interval_ms: 200 } },
    deployment: { timeouts_ms: { connect: 1_000 } },
  })

  const answers = openStreams(gateway, keys, 30)
  const answered: RawResponse[] = []
  for (const answer of answers) void answer.then((stream) => answered.push(stream), () => {})
  // The eleven past the calls' share are answered while the nineteen are still open.
  await waitFor(() => opened() === 19 && answered.length === 11, { timeoutMs: 20_000, what: 'nineteen streams open and eleven answered' }).catch((error: Error) => {
    throw new Error(`${error.message}: ${opened()} opened, ${answered.length} answered: ${answered.map(summary).join(' / ')}`)
  })
  const refused = [...answered]
  // Held behind the calls inside fetch, a probe would run into its connect timeout and take the
  // deployment out; with a place of its own, round after round answers.
  const probedBefore = probed()
  await waitFor(() => probed() >= probedBefore + 5, { timeoutMs: 10_000, what: 'five more probe rounds while the calls hold their places' }).catch((error: Error) => {
    throw new Error(`${error.message}: ${probed() - probedBefore} probed; gateway output:\n${gateway.output()}`)
  })
  releaseAll()
  const streams = await Promise.all(answers)

  expect(refused.map((stream) => [stream.status, JSON.parse(stream.body).error.code, stream.headers.get('retry-after')])).toEqual(Array.from({ length: 11 }, () => [503, 'engine_unavailable', '1']))
  expect(streams.filter(relayed)).toHaveLength(19)
  expect(gateway.output()).not.toContain('failed its health probe')
  // The deployment still serves (the upstream now answers every stream at once).
  const after = await openStreams(gateway, keys, 1)[0]!
  expect(relayed(after) ? 'relayed' : summary(after)).toBe('relayed')
}, 60_000)
