import { beforeAll, describe, expect, test } from 'bun:test'
import OpenAI, { type APIError } from 'openai'
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionTool } from 'openai/resources/chat/completions'
import { useGateway, type GatewayDatabase, type RunningGateway } from '../support/gateway-process'
import { chatModel, demoCatalogPath, embeddingsModel, retiredModel } from '../support/test-app'
import { errorSummary, l2Norm, recordingClient, rejectionOf } from './sdk-client'

interface CatalogEntry {
  id: string
  owned_by: string
  status?: string
  modality: string
  context_window: number
  max_output_tokens: number
  region: string
  published: string
  input_price_egp: string
  output_price_egp: string
  embedding_dimensions?: number
}

const demoCatalog = (await Bun.file(demoCatalogPath).json()) as { models: CatalogEntry[] }
const liveModels = demoCatalog.models.filter((model) => (model.status ?? 'live') === 'live')
const embeddingDimensions = demoCatalog.models.find((model) => model.id === embeddingsModel)!.embedding_dimensions!
const slashModel = 'nile/llama-3.3-70b-instruct'

const weatherTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city', 'unit'] },
  },
}

function question(content = 'What is the longest river in Africa?'): ChatCompletionCreateParamsNonStreaming {
  return { model: chatModel, messages: [{ role: 'user', content }] }
}

function expectUnitVector(vector: ArrayLike<number>, dimensions: number): void {
  expect(vector.length).toBe(dimensions)
  expect(l2Norm(vector)).toBeCloseTo(1, 4)
}

// A single describe per database: both gateways start in beforeAll, one per block, none per test.
describe.each(['pglite', 'postgres'] satisfies GatewayDatabase[])('the official openai SDK against a gateway on %s', (database) => {
  const running = useGateway({ database })
  let gateway: RunningGateway
  let sdk: ReturnType<typeof recordingClient>
  let client: OpenAI

  beforeAll(async () => {
    gateway = running.current
    sdk = recordingClient(gateway.baseUrl, await gateway.createApiKey({ balanceEgp: 1000 }))
    client = sdk.client
  }, 30_000)

  describe('models', () => {
    test('models.list lists every live catalog model with its catalog attributes', async () => {
      const listed = new Map<string, Record<string, unknown>>()
      for await (const model of client.models.list()) listed.set(model.id, model as unknown as Record<string, unknown>)

      expect([...listed.keys()].sort()).toEqual(liveModels.map((model) => model.id).sort())
      for (const entry of liveModels) {
        const model = listed.get(entry.id)!
        expect(model).toMatchObject({
          object: 'model',
          owned_by: entry.owned_by,
          created: Date.parse(`${entry.published}T00:00:00Z`) / 1000,
          status: 'Live',
          modality: entry.modality === 'chat' ? 'Chat' : 'Embeddings',
          context_window: entry.context_window,
          max_output_tokens: entry.max_output_tokens,
          region: entry.region,
        })
        expect(Number(model.input_price_egp_per_1m)).toBe(Number(entry.input_price_egp))
        expect(Number(model.output_price_egp_per_1m)).toBe(Number(entry.output_price_egp))
        expect(model.input_price_egp_per_1m).toMatch(/^\d+\.\d{6}$/)
      }
      expect(listed.get(embeddingsModel)!.embedding_dimensions).toBe(embeddingDimensions)
    })

    test('models.retrieve finds an id that contains a slash (sent as %2F)', async () => {
      const model = await client.models.retrieve(slashModel)

      expect(sdk.last().url).toContain('nile%2Fllama-3.3-70b-instruct')
      expect(model).toMatchObject({ id: slashModel, object: 'model', owned_by: 'nilegate (simulator)', context_window: 131072 })
    })
  })

  describe('chat completions', () => {
    test('a plain completion has an answer and consistent usage', async () => {
      const completion = await client.chat.completions.create(question())

      expect(completion).toMatchObject({ object: 'chat.completion', model: chatModel, choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant' } }] })
      expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0)
      const usage = completion.usage!
      expect(usage.prompt_tokens).toBeGreaterThan(0)
      expect(usage.completion_tokens).toBeGreaterThan(0)
      expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens)
      expect(completion._request_id).toBe(sdk.last().requestId!)
    })

    test('a streamed completion sends chunks, then one usage chunk with empty choices, and ends', async () => {
      const plain = await client.chat.completions.create(question())

      const stream = await client.chat.completions.create({ ...question(), stream: true, stream_options: { include_usage: true } })
      const chunks: OpenAI.ChatCompletionChunk[] = []
      for await (const chunk of stream) chunks.push(chunk)

      const usageChunk = chunks.at(-1)!
      const answerChunks = chunks.slice(0, -1)
      expect(answerChunks.length).toBeGreaterThan(1)
      expect(usageChunk.choices).toEqual([])
      expect(usageChunk.usage).toEqual(plain.usage!)
      for (const chunk of answerChunks) {
        expect(chunk).toMatchObject({ object: 'chat.completion.chunk', id: usageChunk.id, model: chatModel })
        expect(chunk.choices).toHaveLength(1)
        expect(chunk.usage ?? null).toBeNull()
      }
      expect(answerChunks.at(-1)!.choices[0]!.finish_reason).toBe('stop')
      expect(answerChunks.map((chunk) => chunk.choices[0]!.delta.content ?? '').join('')).toBe(plain.choices[0]!.message.content!)
    })

    test('a stream without include_usage has no usage chunk', async () => {
      const stream = await client.chat.completions.create({ ...question(), stream: true })
      const chunks: OpenAI.ChatCompletionChunk[] = []
      for await (const chunk of stream) chunks.push(chunk)

      expect(chunks.every((chunk) => chunk.choices.length === 1 && (chunk.usage ?? null) === null)).toBe(true)
      expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop')
    })

    test('a tools round trip: tool_choice required gives tool_calls, the tool result gives an answer', async () => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'How warm is it in Cairo today?' }]

      const first = await client.chat.completions.create({ model: chatModel, messages, tools: [weatherTool], tool_choice: 'required' })

      const call = first.choices[0]!
      expect(call.finish_reason).toBe('tool_calls')
      const toolCall = call.message.tool_calls![0]!
      expect(toolCall.type).toBe('function')
      if (toolCall.type !== 'function') throw new Error('expected a function call')
      expect(toolCall.id.length).toBeGreaterThan(0)
      expect(toolCall.function.name).toBe('get_weather')
      expect(typeof toolCall.function.arguments).toBe('string')
      const args = JSON.parse(toolCall.function.arguments) as Record<string, unknown>
      expect(typeof args.city).toBe('string')
      expect(['celsius', 'fahrenheit']).toContain(args.unit as string)

      const second = await client.chat.completions.create({
        model: chatModel,
        messages: [...messages, call.message, { role: 'tool', tool_call_id: toolCall.id, content: JSON.stringify({ temperature: 31, unit: args.unit }) }],
        tools: [weatherTool],
      })

      expect(second.choices[0]!.finish_reason).toBe('stop')
      expect(second.choices[0]!.message.tool_calls ?? []).toEqual([])
      expect(second.choices[0]!.message.content!.length).toBeGreaterThan(0)
    })

    test('structured output: chat.completions.parse gets JSON that fits the json_schema, and json_object gets a JSON object', async () => {
      const schema = { type: 'object', properties: { city: { type: 'string' }, population: { type: 'integer' } }, required: ['city', 'population'], additionalProperties: false }

      const parsed = await client.chat.completions.parse({ ...question('Name a city on the Nile.'), response_format: { type: 'json_schema', json_schema: { name: 'city', schema, strict: true } } })
      const object = await client.chat.completions.create({ ...question('Answer in JSON.'), response_format: { type: 'json_object' } })

      const city = parsed.choices[0]!.message.parsed as { city: unknown; population: unknown }
      expect([typeof city.city, Number.isInteger(city.population)]).toEqual(['string', true])
      expect(typeof JSON.parse(object.choices[0]!.message.content!)).toBe('object')
    })
  })

  describe('embeddings', () => {
    test("the SDK's default asks for base64 and decodes it to unit vectors of the model's dimensions", async () => {
      const response = await client.embeddings.create({ model: embeddingsModel, input: ['the Nile at Aswan', 'the Nile delta'] })

      const wire = sdk.last()
      expect(wire.requestBody!.encoding_format).toBe('base64')
      const raw = JSON.parse(await wire.responseText!) as { data: Array<{ embedding: unknown }> }
      expect(raw.data.map((item) => typeof item.embedding)).toEqual(['string', 'string'])
      expect(response.data.map((item) => item.index)).toEqual([0, 1])
      for (const item of response.data) expectUnitVector(item.embedding, embeddingDimensions)
      expect(response.usage.prompt_tokens).toBeGreaterThan(0)
      expect(response.usage.total_tokens).toBe(response.usage.prompt_tokens)
    })

    test("encoding_format 'float' answers JSON numbers equal to the decoded base64", async () => {
      const input = 'papyrus boats on the river'
      const decoded = await client.embeddings.create({ model: embeddingsModel, input })

      const floats = await client.embeddings.create({ model: embeddingsModel, input, encoding_format: 'float' })

      expect(Array.isArray(floats.data[0]!.embedding)).toBe(true)
      expectUnitVector(floats.data[0]!.embedding, embeddingDimensions)
      expect(Array.from(Float32Array.from(floats.data[0]!.embedding))).toEqual(Array.from(decoded.data[0]!.embedding))
    })

    test('dimensions shortens the vectors, still of unit length', async () => {
      const response = await client.embeddings.create({ model: embeddingsModel, input: 'a felucca at sunset', dimensions: 256 })

      expectUnitVector(response.data[0]!.embedding, 256)
    })

    test('token ids of cl100k_base, one array or several, embed as their text and count as tokens', async () => {
      // "hello world", then "The Nile is long." and "نهر النيل", as cl100k_base ids (LangChain's Python OpenAIEmbeddings sends these).
      const single = await client.embeddings.create({ model: embeddingsModel, input: [15339, 1917] })
      const several = await client.embeddings.create({ model: embeddingsModel, input: [[791, 77290, 374, 1317, 13], [12061, 16552, 11318, 17607, 12061, 96298]], encoding_format: 'float' })
      const texts = await client.embeddings.create({ model: embeddingsModel, input: ['hello world', 'The Nile is long.', 'نهر النيل'] })

      expect(single.data).toHaveLength(1)
      expectUnitVector(single.data[0]!.embedding, embeddingDimensions)
      expect(single.data[0]!.embedding).toEqual(texts.data[0]!.embedding)
      expect(several.data.map((item) => item.embedding)).toEqual([texts.data[1]!.embedding, texts.data[2]!.embedding])
      expect(single.usage.prompt_tokens).toBe(2)
      expect(several.usage.prompt_tokens).toBe(11)
    })
  })

  describe('errors arrive as the SDK error classes, with status, code, param and the request id', () => {
    const badRequests: Array<[string, () => Promise<unknown>, { code: string; param: string | null }]> = [
      ['an unknown model', () => client.chat.completions.create({ ...question(), model: 'nile/no-such-model' }), { code: 'model_not_found', param: 'model' }],
      ['an unknown model, streamed', () => client.chat.completions.create({ ...question(), model: 'nile/no-such-model', stream: true }), { code: 'model_not_found', param: 'model' }],
      ['an unknown role', () => client.chat.completions.create({ model: chatModel, messages: [{ role: 'robot', content: 'beep' }] as never }), { code: 'invalid_role', param: 'messages[0].role' }],
      ['a message without content', () => client.chat.completions.create({ model: chatModel, messages: [{ role: 'user' }] as never }), { code: 'missing_content', param: 'messages[0].content' }],
      ['max_tokens above the context window', () => client.chat.completions.create({ ...question(), max_tokens: 1_000_000 }), { code: 'max_tokens_exceeded', param: 'max_tokens' }],
      ['a chat model on /v1/embeddings', () => client.embeddings.create({ model: chatModel, input: 'hello' }), { code: 'model_not_supported_on_endpoint', param: 'model' }],
      ['an embeddings model on /v1/chat/completions', () => client.chat.completions.create({ ...question(), model: embeddingsModel }), { code: 'model_not_supported_on_endpoint', param: 'model' }],
      ['a token id that cl100k_base does not have', () => client.embeddings.create({ model: embeddingsModel, input: [[15339], [1917, 100256]] }), { code: 'invalid_request', param: 'input[1][1]' }],
      ['temperature out of range', () => client.chat.completions.create({ ...question(), temperature: 3 }), { code: 'invalid_request', param: 'temperature' }],
      ['dimensions above the model', () => client.embeddings.create({ model: embeddingsModel, input: 'x', dimensions: embeddingDimensions + 1 }), { code: 'invalid_request', param: 'dimensions' }],
    ]

    test.each(badRequests)('%s: BadRequestError', async (_, call, expected) => {
      const error = await rejectionOf(call())

      expect(error).toBeInstanceOf(OpenAI.BadRequestError)
      expect(errorSummary(error)).toEqual({ status: 400, ...expected })
      expect((error as APIError).requestID).toBe(sdk.last().requestId!)
      expect(sdk.last().requestId).toMatch(/^req_/)
    })

    test.each([
      ['an unknown key', `sk-${'0'.repeat(48)}`, 'invalid_api_key'],
      ['a token that is no API key', 'not-an-api-key', 'invalid_api_key_format'],
    ])('%s: AuthenticationError', async (_, apiKey, code) => {
      const stranger = recordingClient(gateway.baseUrl, apiKey)

      const error = await rejectionOf(stranger.client.chat.completions.create(question()))

      expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
      expect(errorSummary(error)).toEqual({ status: 401, code, param: null })
      expect((error as APIError).requestID).toBe(stranger.last().requestId!)
    })

    test.each([
      ['chat with a retired model', () => client.chat.completions.create({ ...question(), model: retiredModel })],
      ['retrieving a retired model', () => client.models.retrieve(retiredModel)],
    ])('%s: PermissionDeniedError model_sunset', async (_, call) => {
      const error = await rejectionOf(call())

      expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect(errorSummary(error)).toEqual({ status: 403, code: 'model_sunset', param: 'model' })
      expect((error as APIError).message).toContain('nile/llama-3.3-70b-instruct')
      expect((error as APIError).requestID).toBe(sdk.last().requestId!)
    })

    test('retrieving an unknown model: NotFoundError', async () => {
      const error = await rejectionOf(client.models.retrieve('nile/no-such-model'))

      expect(error).toBeInstanceOf(OpenAI.NotFoundError)
      expect(errorSummary(error)).toEqual({ status: 404, code: 'not_found', param: 'model' })
      expect((error as APIError).requestID).toBe(sdk.last().requestId!)
    })

    test('more than 2,000,000 characters in one message: UnprocessableEntityError', async () => {
      const error = await rejectionOf(client.chat.completions.create(question('x'.repeat(2_000_001))))

      expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError)
      expect(errorSummary(error)).toEqual({ status: 422, code: 'content_limit_exceeded', param: 'messages[0].content' })
      expect((error as APIError).requestID).toBe(sdk.last().requestId!)
    })

    test('a body over 32 MiB: APIError 413 request_too_large', async () => {
      const error = await rejectionOf(client.chat.completions.create(question('x'.repeat(33 * 1024 * 1024))))

      expect(error).toBeInstanceOf(OpenAI.APIError)
      expect(errorSummary(error)).toEqual({ status: 413, code: 'request_too_large', param: null })
      expect((error as APIError).message).toContain('33554432')
      expect((error as APIError).requestID).toBe(sdk.last().requestId!)
    }, 20_000)
  })
})
