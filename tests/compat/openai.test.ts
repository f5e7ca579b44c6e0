import { beforeAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import OpenAIv4 from 'openai-v4'
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions'
import { VERSION } from 'openai/version'
import { VERSION as VERSION_V4 } from 'openai-v4/version'
import { edgeRequestsPerSecond } from '../../server/core/edge-limiter'
import { useGateway } from '../support/gateway-process'
import { chatModel, embeddingDimensions, embeddingsModel } from './demo-models'
import { openAIViolations } from './openai-conformance'
import { recordWire, type WireRecorder } from './wire-recorder'

const weatherTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}

// v4's calls used here have the same shape as the current major's, so one scenario, written against
// the current types, runs both; the v4 class stands in for them at run time only.
const sdks: Array<[string, typeof OpenAI]> = [
  [`openai ${VERSION}`, OpenAI],
  [`openai ${VERSION_V4}`, OpenAIv4 as unknown as typeof OpenAI],
]

const gateway = useGateway({ database: 'pglite' })
let apiKey: string

beforeAll(async () => {
  apiKey = await gateway.current.createApiKey({ balanceEgp: 1000 })
}, 30_000)

/**
 * Spends the key's whole per-second allowance at the gateway's edge in one burst of model lists, so
 * that its next request within the second is refused with `Retry-After: 1`. (A key's RPM limit is
 * no use here: its window is a minute, so its Retry-After is up to 60 s, more than a test can wait.)
 */
async function spendEdgeAllowance(key: string): Promise<void> {
  const statuses = await Promise.all(
    Array.from({ length: edgeRequestsPerSecond }, async () => (await fetch(`${gateway.current.baseUrl}/models`, { headers: { authorization: `Bearer ${key}` } })).status),
  )
  expect(new Set(statuses)).toEqual(new Set([200]))
}

describe.each(sdks)('%s', (_, Sdk) => {
  function client(wire: WireRecorder, options: { apiKey?: string; maxRetries?: number } = {}): OpenAI {
    return new Sdk({ baseURL: gateway.current.baseUrl, apiKey: options.apiKey ?? apiKey, maxRetries: options.maxRetries ?? 0, timeout: 15_000, fetch: wire.fetch })
  }

  test('models.list lists the catalog', async () => {
    const wire = recordWire()

    const ids: string[] = []
    for await (const model of client(wire).models.list()) ids.push(model.id)

    expect(ids).toContain(chatModel)
    expect(ids).toContain(embeddingsModel)
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('a chat completion has an answer and usage', async () => {
    const wire = recordWire()

    const completion = await client(wire).chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'Name a river.' }] })

    expect(completion.choices[0]!.message.content).not.toBe('')
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens)
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('a streamed chat completion with include_usage ends with a usage chunk', async () => {
    const wire = recordWire()

    const stream = await client(wire).chat.completions.create({
      model: chatModel,
      messages: [{ role: 'user', content: 'Name a river.' }],
      stream: true,
      stream_options: { include_usage: true },
    })
    const chunks: ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)

    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')
    expect(text).not.toBe('')
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop')
    expect(chunks.at(-1)!.choices).toEqual([])
    expect(chunks.at(-1)!.usage!.completion_tokens).toBeGreaterThan(0)
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('a tools round trip: tool_calls, then the tool result, then the answer', async () => {
    const wire = recordWire()
    const openai = client(wire)
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Call get_weather for Cairo, please.' }]

    const first = await openai.chat.completions.create({ model: chatModel, messages, tools: [weatherTool] })
    const call = first.choices[0]!.message.tool_calls![0]!
    if (call.type !== 'function') throw new Error(`expected a function call, got ${call.type}`)
    const args = JSON.parse(call.function.arguments) as { city: string }
    const second = await openai.chat.completions.create({
      model: chatModel,
      messages: [...messages, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ city: args.city, celsius: 31 }) }],
      tools: [weatherTool],
    })

    expect(first.choices[0]!.finish_reason).toBe('tool_calls')
    expect(call.function.name).toBe('get_weather')
    expect(typeof args.city).toBe('string')
    expect(second.choices[0]!.finish_reason).toBe('stop')
    expect(second.choices[0]!.message.content).not.toBe('')
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('logprobs and structured output, whole and streamed, come in OpenAI\'s shapes', async () => {
    const wire = recordWire()
    const openai = client(wire)
    const asked = { model: chatModel, messages: [{ role: 'user' as const, content: 'Name a river.' }], logprobs: true, top_logprobs: 2 }
    const schema = { type: 'object', properties: { river: { type: 'string' } }, required: ['river'], additionalProperties: false }

    const whole = await openai.chat.completions.create(asked)
    const chunks: ChatCompletionChunk[] = []
    for await (const chunk of await openai.chat.completions.create({ ...asked, stream: true })) chunks.push(chunk)
    const structured = await openai.chat.completions.create({ ...asked, response_format: { type: 'json_schema', json_schema: { name: 'river', schema, strict: true } } })

    expect(whole.choices[0]!.logprobs!.content!.map((entry) => entry.token).join('')).toBe(whole.choices[0]!.message.content!)
    expect(chunks.flatMap((chunk) => chunk.choices[0]?.logprobs?.content ?? [])).toEqual(whole.choices[0]!.logprobs!.content!)
    expect(typeof JSON.parse(structured.choices[0]!.message.content!).river).toBe('string')
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('embeddings travel as base64 by default and reach the caller as numbers', async () => {
    const wire = recordWire()

    const response = await client(wire).embeddings.create({ model: embeddingsModel, input: ['the Nile at Aswan', 'the Nile delta'] })

    expect(wire.exchanges[0]!.requestBody).toMatchObject({ encoding_format: 'base64' })
    const raw = JSON.parse(await wire.exchanges[0]!.body) as { data: Array<{ embedding: unknown }> }
    expect(raw.data.map((item) => typeof item.embedding)).toEqual(['string', 'string'])
    expect(response.data.map((item) => [item.index, item.embedding.length, typeof item.embedding[0]])).toEqual([
      [0, embeddingDimensions, 'number'],
      [1, embeddingDimensions, 'number'],
    ])
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  describe('errors arrive as the SDK classes with the catalog code', () => {
    const cases: Array<[string, 'BadRequestError' | 'NotFoundError', (openai: OpenAI) => Promise<unknown>, { status: number; code: string }]> = [
      ['400 invalid_request', 'BadRequestError', (openai) => openai.chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'hi' }], temperature: 3 }), { status: 400, code: 'invalid_request' }],
      ['400 model_not_found, streamed', 'BadRequestError', (openai) => openai.chat.completions.create({ model: 'nile/no-such-model', messages: [{ role: 'user', content: 'hi' }], stream: true }), { status: 400, code: 'model_not_found' }],
      ['404 for an unknown model', 'NotFoundError', (openai) => openai.models.retrieve('nile/no-such-model'), { status: 404, code: 'not_found' }],
    ]

    test.each(cases)('%s: %s', async (_, errorClass, call, expected) => {
      const wire = recordWire()

      const error = await call(client(wire)).then(() => null, (rejection: unknown) => rejection)

      expect(error).toBeInstanceOf(Sdk[errorClass])
      expect(error).toMatchObject(expected)
      expect(await openAIViolations(wire.exchanges)).toEqual([])
    })

    test('401 invalid_api_key', async () => {
      const wire = recordWire()

      const error = await client(wire, { apiKey: `sk-${'0'.repeat(48)}` }).models.list().then(() => null, (rejection: unknown) => rejection)

      expect(error).toBeInstanceOf(Sdk.AuthenticationError)
      expect(error).toMatchObject({ status: 401, code: 'invalid_api_key' })
      expect(await openAIViolations(wire.exchanges)).toEqual([])
    })
  })

  test('a 429 is retried after its Retry-After, then succeeds', async () => {
    const burstKey = await gateway.current.createApiKey()
    const wire = recordWire()
    await spendEdgeAllowance(burstKey)

    const completion = await client(wire, { apiKey: burstKey, maxRetries: 2 }).chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'hi' }] })

    expect(completion.choices[0]!.message.content).not.toBe('')
    expect(wire.exchanges.map((exchange) => [exchange.status, exchange.responseHeaders.get('retry-after')])).toEqual([
      [429, '1'],
      [200, null],
    ])
    // The SDK's own backoff before a first retry is at most 0.5 s: a second's wait is the header's.
    const [refused, retried] = wire.exchanges
    expect(JSON.parse(await refused!.body)).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' } })
    expect(retried!.sentAtMs - refused!.answeredAtMs).toBeGreaterThanOrEqual(950)
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  }, 20_000)
})
