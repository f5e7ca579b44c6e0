import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type OpenAI from 'openai'
import postgres from 'postgres'
import { hashApiKey } from '../../server/core/api-keys'
import { catalogFileModel } from '../support/catalog-file-model'
import { createTempDir } from '../support/databases'
import { ControlledStream, doneFrame, sseFrame, startFakeUpstream, upstreamChunk, upstreamUsageChunk, type FakeUpstream, type ReceivedRequest } from '../support/fake-upstream'
import { useGateway } from '../support/gateway-process'
import { chatModel, demoCatalogPath, embeddingsModel } from '../support/test-app'
import { waitFor } from '../support/wait-for'
import { recordingClient } from './sdk-client'

// The paced model: whole EGP prices, so a cost in micro-EGP is prompt * 2 + completion * 6 exactly.
const pacedModel = 'e2e/paced-upstream'
const pacedCost = (prompt: number, completion: number) => prompt * 2 + completion * 6
// Demo prices (server/demo-catalog.json), whole EGP per 1M tokens as well.
const chatCost = (prompt: number, completion: number) => prompt * 5 + completion * 15
const embeddingsCost = (prompt: number) => prompt * 1
// Four characters each, so the estimator (4 characters a token) agrees with the upstream's count.
const answerPieces = Array.from({ length: 40 }, (_, i) => ` w${String(i).padStart(2, '0')}`)
const upstreamPromptTokens = 12

interface UsageRow {
  request_id: string
  key_id: string
  org_id: string
  project_id: string
  model: string
  endpoint: string
  stream: boolean
  prompt_tokens: number
  completion_tokens: number
  cost_micros: string
  status: number
  latency_ms: number
}

/** Races `promise` against a deadline, so a missing event fails the test with a reason instead of hanging it. */
function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${timeoutMs} ms`)), timeoutMs)
  })
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}

// The fake upstream answers streams with a body the test writes chunk by chunk.
let upstream: FakeUpstream
const upstreamStreams: ControlledStream[] = []
let catalogDir: ReturnType<typeof createTempDir>

beforeAll(async () => {
  upstream = startFakeUpstream((request) => {
    // The gateway's health probes GET /models now and then: answered, and never taken for a test's stream.
    if (request.method === 'GET') return Response.json({ object: 'list', data: [] })
    const stream = new ControlledStream()
    upstreamStreams.push(stream)
    return stream.response()
  })
  catalogDir = createTempDir('e2e-catalog')
  const demo = (await Bun.file(demoCatalogPath).json()) as { models: unknown[] }
  const paced = catalogFileModel({
    id: pacedModel,
    owned_by: 'e2e (fake upstream)',
    published: '2025-01-01',
    input_price_egp: '2',
    output_price_egp: '6',
    deployments: [{ provider: 'openai-compatible', base_url: upstream.baseUrl, upstream_model: 'paced-upstream' }],
  })
  await Bun.write(join(catalogDir.path, 'catalog.json'), JSON.stringify({ models: [...demo.models, paced] }))
})

const gateway = useGateway(() => ({ database: 'postgres', catalogPath: join(catalogDir.path, 'catalog.json') }))
let sql: postgres.Sql
let apiKey: string

beforeAll(async () => {
  sql = postgres(gateway.current.databaseUrl!, { max: 2, onnotice: () => {} })
  apiKey = await gateway.current.createApiKey()
}, 30_000)

afterAll(async () => {
  await sql?.end({ timeout: 5 })
  upstream?.stop()
  catalogDir?.remove()
})

async function keyRow(key: string): Promise<{ id: string; org_id: string; project_id: string }> {
  const [row] = await sql<Array<{ id: string; org_id: string; project_id: string }>>`select id, org_id, project_id from api_keys where secret_hash = ${hashApiKey(key)}`
  return row!
}

/** The usage rows of these requests, once all of them have been written (polled: they are batched). */
async function usageRows(requestIds: string[], timeoutMs = 5_000): Promise<Map<string, UsageRow>> {
  let rows: UsageRow[] = []
  await waitFor(
    async () => {
      rows = await sql<UsageRow[]>`select * from usage_events where request_id in ${sql(requestIds)}`
      return rows.length === requestIds.length
    },
    { timeoutMs, what: `usage rows for ${requestIds.join(', ')}` },
  )
  return new Map(rows.map((row) => [row.request_id, row]))
}

/** The first upstream stream not yet taken, with the request that opened it. */
async function nextUpstreamStream(taken: number): Promise<{ request: ReceivedRequest; stream: ControlledStream }> {
  let request = await within(upstream.nextRequest(), 5_000, 'the upstream request')
  while (request.method === 'GET') request = await within(upstream.nextRequest(), 5_000, 'the upstream request')
  await waitFor(() => upstreamStreams.length > taken, { timeoutMs: 2_000, what: 'the upstream stream' })
  return { request, stream: upstreamStreams[taken]! }
}

describe('usage events', () => {
  test('plain, streamed and embeddings requests are recorded by request id with tokens, cost, status and latency', async () => {
    const { client } = recordingClient(gateway.current.baseUrl, apiKey)
    const messages = [{ role: 'user' as const, content: 'Which city lies at the head of the Nile delta?' }]

    const plain = await client.chat.completions.create({ model: chatModel, messages }).withResponse()
    const streamed = await client.chat.completions.create({ model: chatModel, messages, stream: true, stream_options: { include_usage: true } }).withResponse()
    let streamedUsage: OpenAI.CompletionUsage | null = null
    for await (const chunk of streamed.data) streamedUsage = chunk.usage ?? streamedUsage
    const embedded = await client.embeddings.create({ model: embeddingsModel, input: ['Aswan', 'Luxor'] }).withResponse()

    const key = await keyRow(apiKey)
    const rows = await usageRows([plain.request_id!, streamed.request_id!, embedded.request_id!])
    const owner = { key_id: key.id, org_id: key.org_id, project_id: key.project_id, status: 200 }
    const { prompt_tokens, completion_tokens } = plain.data.usage!
    expect(rows.get(plain.request_id!)).toMatchObject({ ...owner, model: chatModel, endpoint: 'chat.completions', stream: false, prompt_tokens, completion_tokens, cost_micros: String(chatCost(prompt_tokens, completion_tokens)) })
    expect(streamedUsage).toEqual(plain.data.usage!)
    expect(rows.get(streamed.request_id!)).toMatchObject({ ...owner, model: chatModel, endpoint: 'chat.completions', stream: true, prompt_tokens, completion_tokens, cost_micros: String(chatCost(prompt_tokens, completion_tokens)) })
    const embeddingTokens = embedded.data.usage.prompt_tokens
    expect(rows.get(embedded.request_id!)).toMatchObject({ ...owner, model: embeddingsModel, endpoint: 'embeddings', stream: false, prompt_tokens: embeddingTokens, completion_tokens: 0, cost_micros: String(embeddingsCost(embeddingTokens)) })
    for (const row of rows.values()) expect(row.latency_ms).toBeWithin(0, 5_000)
  })
})

describe('key changes in the database', () => {
  async function pollUntilRefused(key: string, timeoutMs: number): Promise<{ code: string; afterMs: number }> {
    const started = performance.now()
    let code = ''
    await waitFor(
      async () => {
        const response = await fetch(`${gateway.current.baseUrl}/models`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(2_000) })
        // 429: the edge guard (100 requests per second per key) answered before the key was checked.
        if (response.status === 200 || response.status === 429) return false
        code = ((await response.json()) as { error: { code: string } }).error.code
        return true
      },
      { timeoutMs, what: 'the key to be refused' },
    )
    return { code, afterMs: performance.now() - started }
  }

  test.each([
    ['revoked', 'revoked_at', () => new Date(), 'key_revoked'],
    ['expired', 'expires_at', () => new Date(Date.now() - 1_000), 'key_expired'],
  ])(
    'a warm key %s with UPDATE api_keys answers 401 within a few seconds',
    async (_, column, value, expectedCode) => {
      const key = await gateway.current.createApiKey()
      const warm = await fetch(`${gateway.current.baseUrl}/models`, { headers: { authorization: `Bearer ${key}` } })
      expect(warm.status).toBe(200)

      await sql`update api_keys set ${sql(column)} = ${value()} where secret_hash = ${hashApiKey(key)}`

      const refused = await pollUntilRefused(key, 5_000)
      expect(refused.code).toBe(expectedCode)
      expect(refused.afterMs).toBeLessThan(5_000)
    },
    15_000,
  )

  test('a warm key needs no database round trip: it is served while api_keys is locked, a cold key waits', async () => {
    const [warmKey, coldKey] = await Promise.all([gateway.current.createApiKey(), gateway.current.createApiKey()])
    const chat = (key: string, timeoutMs: number) =>
      fetch(`${gateway.current.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: chatModel, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
        signal: AbortSignal.timeout(timeoutMs),
      })
    expect((await chat(warmKey, 5_000)).status).toBe(200)

    let cold: Promise<Response> | undefined
    let coldSettled = false
    await sql.begin(async (tx) => {
      await tx`lock table api_keys in access exclusive mode`
      cold = chat(coldKey, 20_000)
      cold.then(() => (coldSettled = true), () => (coldSettled = true))

      const statuses: number[] = []
      for (let i = 0; i < 20; i++) statuses.push((await chat(warmKey, 2_000)).status)

      expect(statuses).toEqual(Array(20).fill(200))
      expect(coldSettled).toBe(false)
    })

    expect((await cold!).status).toBe(200)
  }, 30_000)
})

describe('streams through an OpenAI-compatible upstream', () => {
  test('chunks are relayed unbuffered: each arrives before the upstream sends the next', async () => {
    const { client } = recordingClient(gateway.current.baseUrl, apiKey)
    const taken = upstreamStreams.length
    const opening = client.chat.completions.create({ model: pacedModel, messages: [{ role: 'user', content: 'Count for me' }], stream: true, stream_options: { include_usage: true } }).withResponse()
    const { request, stream: upstreamStream } = await nextUpstreamStream(taken)

    upstreamStream.send(sseFrame(upstreamChunk({ role: true, content: answerPieces[0] })))
    const { data: stream, request_id: requestId } = await within(opening, 5_000, 'the first chunk through the gateway')
    const chunks = stream[Symbol.asyncIterator]()
    const received: string[] = []
    for (let i = 0; ; i++) {
      const next = await within(chunks.next(), 3_000, `chunk ${i} through the gateway while the upstream waits`)
      expect(next.done).toBe(false)
      received.push(next.value!.choices[0]!.delta.content!)
      if (i + 1 === answerPieces.length) break
      upstreamStream.send(sseFrame(upstreamChunk({ content: answerPieces[i + 1] })))
    }
    upstreamStream.send(sseFrame(upstreamChunk({ finish: 'stop' })))
    upstreamStream.send(sseFrame(upstreamUsageChunk(upstreamPromptTokens, answerPieces.length)))
    upstreamStream.send(doneFrame)
    upstreamStream.close()
    const rest: Array<{ finish: string | null; usage: unknown }> = []
    for (let next = await within(chunks.next(), 3_000, 'the end of the stream'); !next.done; next = await within(chunks.next(), 3_000, 'the end of the stream')) {
      rest.push({ finish: next.value.choices[0]?.finish_reason ?? null, usage: next.value.usage ?? null })
    }

    expect(received).toEqual(answerPieces)
    const usage = { prompt_tokens: upstreamPromptTokens, completion_tokens: answerPieces.length, total_tokens: upstreamPromptTokens + answerPieces.length }
    expect(rest).toEqual([{ finish: 'stop', usage: null }, { finish: null, usage }])
    expect(request.headers.get('x-request-id')).toBe(requestId!)
    expect(request.body).toMatchObject({ model: 'paced-upstream', stream: true, stream_options: { include_usage: true } })
    const row = (await usageRows([requestId!])).get(requestId!)
    expect(row).toMatchObject({ status: 200, stream: true, model: pacedModel, prompt_tokens: upstreamPromptTokens, completion_tokens: answerPieces.length, cost_micros: String(pacedCost(upstreamPromptTokens, answerPieces.length)) })
  })

  test('a client abort mid-stream aborts the upstream request and is recorded as 499 with the tokens produced', async () => {
    const { client } = recordingClient(gateway.current.baseUrl, apiKey)
    const abort = new AbortController()
    const relayedBeforeAbort = 3
    const taken = upstreamStreams.length
    const opening = client.chat.completions.create({ model: pacedModel, messages: [{ role: 'user', content: 'Count slowly' }], stream: true }, { signal: abort.signal }).withResponse()
    const { request, stream: upstreamStream } = await nextUpstreamStream(taken)

    upstreamStream.send(sseFrame(upstreamChunk({ role: true, content: answerPieces[0] })))
    const { data: stream, request_id: requestId } = await within(opening, 5_000, 'the first chunk through the gateway')
    const chunks = stream[Symbol.asyncIterator]()
    for (let i = 0; i < relayedBeforeAbort; i++) {
      await within(chunks.next(), 3_000, `chunk ${i} through the gateway`)
      if (i + 1 < relayedBeforeAbort) upstreamStream.send(sseFrame(upstreamChunk({ content: answerPieces[i + 1] })))
    }
    abort.abort()

    const upstreamSaw = await within(Promise.race([request.aborted.then(() => 'request aborted'), upstreamStream.cancelled.then(() => 'stream cancelled')]), 5_000, 'the upstream abort')
    expect(['request aborted', 'stream cancelled']).toContain(upstreamSaw)
    const row = (await usageRows([requestId!])).get(requestId!)!
    expect(row).toMatchObject({ status: 499, stream: true, model: pacedModel })
    expect(row.completion_tokens).toBeGreaterThan(0)
    expect(row.completion_tokens).toBeLessThan(answerPieces.length)
    expect(row.completion_tokens).toBe(relayedBeforeAbort)
    expect(row.prompt_tokens).toBeGreaterThan(0)
    expect(row.cost_micros).toBe(String(pacedCost(row.prompt_tokens, row.completion_tokens)))
  })
})
