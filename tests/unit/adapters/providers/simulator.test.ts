import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import type { ChatCompletionChunk, ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { SimulatorProvider } from '../../../../server/adapters/providers/simulator'
import type { CatalogModel } from '../../../../server/core/catalog'
import { estimatePromptTokens, estimateTextTokens } from '../../../../server/core/estimate-tokens'
import type { ChatChunkIterator, ProviderCall } from '../../../../server/core/ports'
import { textInput } from '../../../support/embedding-input'
import { parseCatalogFile } from '../../../../server/catalog-file'
import demoCatalog from '../../../../server/demo-catalog.json'

const [chatModel, , , embeddingModel] = parseCatalogFile(demoCatalog)
const simulator = new SimulatorProvider()

interface CallOptions {
  model?: Partial<CatalogModel>
  ttftMs?: number
  interTokenMs?: number
  signal?: AbortSignal
  requestId?: string
}

function simulatorCall(options: CallOptions = {}, base: CatalogModel = chatModel!): ProviderCall {
  const model = { ...base, ...options.model }
  const deployment = { ...base.deployments[0]!, simulator: { ttftMs: options.ttftMs ?? 0, interTokenMs: options.interTokenMs ?? 0 } }
  return { requestId: options.requestId ?? 'req_test', signal: options.signal ?? new AbortController().signal, model, deployment }
}

function chatRequest(overrides: Partial<ChatCompletionRequest> & { content?: string } = {}): ChatCompletionRequest {
  const { content = 'Tell me something about the river.', ...rest } = overrides
  return { model: chatModel!.id, messages: [{ role: 'user', content }], ...rest }
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

function streamedText(chunks: ChatCompletionChunk[], index = 0): string {
  let text = ''
  for (const chunk of chunks) for (const choice of chunk.choices) if (choice.index === index) text += choice.delta.content ?? ''
  return text
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!
  return dot
}

function norm(vector: Float32Array): number {
  return Math.sqrt(cosine(vector, vector))
}

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
      required: ['city', 'unit', 'days'],
    },
  },
}
const stockTool = {
  type: 'function' as const,
  function: { name: 'get_stock_price', parameters: { type: 'object', properties: { symbol: { type: 'string' } }, required: ['symbol'] } },
}

describe('SimulatorProvider.chat', () => {
  test('answers the same messages with the same text, and other messages with other text', async () => {
    const first = await simulator.chat(chatRequest(), simulatorCall({ requestId: 'req_a' }))
    const again = await simulator.chat(chatRequest(), simulatorCall({ requestId: 'req_b' }))
    const other = await simulator.chat(chatRequest({ content: 'Something entirely different, please.' }), simulatorCall())

    expect(again.choices[0]!.message.content).toBe(first.choices[0]!.message.content)
    expect(other.choices[0]!.message.content).not.toBe(first.choices[0]!.message.content)
  })

  test('returns a chat.completion named after the request and the catalog model', async () => {
    const before = Math.floor(Date.now() / 1000)

    const completion = await simulator.chat(chatRequest(), simulatorCall({ requestId: 'req_42' }))

    expect(completion).toMatchObject({ id: 'chatcmpl-req_42', object: 'chat.completion', model: chatModel!.id })
    expect(completion.created).toBeGreaterThanOrEqual(before)
    expect(completion.choices).toEqual([
      { index: 0, message: { role: 'assistant', content: expect.any(String), refusal: null }, logprobs: null, finish_reason: 'stop' },
    ])
  })

  test('writes between 16 and 64 tokens by default, counted in usage close to the estimator', async () => {
    for (let i = 0; i < 30; i++) {
      const body = chatRequest({ content: `Question number ${i}?` })

      const { choices, usage } = await simulator.chat(body, simulatorCall())

      const content = choices[0]!.message.content!
      expect(usage.completion_tokens).toBeGreaterThanOrEqual(16)
      expect(usage.completion_tokens).toBeLessThanOrEqual(64)
      expect(usage.prompt_tokens).toBe(estimatePromptTokens(body.messages))
      expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens)
      const estimated = estimateTextTokens(content)
      expect(estimated / usage.completion_tokens).toBeGreaterThan(0.7)
      expect(estimated / usage.completion_tokens).toBeLessThan(1.4)
    }
  })

  test('stops at max_tokens with finish_reason length', async () => {
    const full = await simulator.chat(chatRequest(), simulatorCall())

    const cut = await simulator.chat(chatRequest({ max_tokens: 5 }), simulatorCall())

    expect(cut.usage.completion_tokens).toBe(5)
    expect(cut.choices[0]!.finish_reason).toBe('length')
    expect(full.choices[0]!.message.content!.startsWith(cut.choices[0]!.message.content!)).toBe(true)
  })

  test('prefers max_completion_tokens over max_tokens', async () => {
    const { usage } = await simulator.chat(chatRequest({ max_tokens: 3, max_completion_tokens: 7 }), simulatorCall())

    expect(usage.completion_tokens).toBe(7)
  })

  test("never writes more than the model's maxOutputTokens", async () => {
    const { usage, choices } = await simulator.chat(chatRequest({ max_tokens: 1000 }), simulatorCall({ model: { maxOutputTokens: 10 } }))

    expect(usage.completion_tokens).toBe(10)
    expect(choices[0]!.finish_reason).toBe('length')
  })

  test('cuts the text before the earliest stop sequence and finishes with stop', async () => {
    const full = (await simulator.chat(chatRequest(), simulatorCall())).choices[0]!.message.content!
    const words = full.split(' ')
    const stop = ` ${words[4]}`
    const later = ` ${words[8]}`

    const { choices, usage } = await simulator.chat(chatRequest({ stop: [later, stop] }), simulatorCall())

    expect(choices[0]!.message.content).toBe(full.slice(0, Math.min(full.indexOf(stop), full.indexOf(later))))
    expect(choices[0]!.finish_reason).toBe('stop')
    expect(usage.completion_tokens).toBeGreaterThanOrEqual(5)
  })

  test('answers n choices, indexed 0..n-1, with usage summed over them', async () => {
    const { choices, usage } = await simulator.chat(chatRequest({ n: 3 }), simulatorCall())

    expect(choices.map((choice) => choice.index)).toEqual([0, 1, 2])
    expect(new Set(choices.map((choice) => choice.message.content)).size).toBeGreaterThan(1)
    expect(usage.completion_tokens).toBeGreaterThan(3 * 15)
  })

  test('answers in Arabic when the last user message is mostly Arabic, in English otherwise', async () => {
    const arabic = await simulator.chat(chatRequest({ content: 'ما هي عاصمة مصر؟ أجب باختصار من فضلك' }), simulatorCall())
    const english = await simulator.chat(chatRequest({ content: 'What is the capital of Egypt? Answer briefly.' }), simulatorCall())

    const arabicLetters = (text: string) => [...text].filter((char) => char >= '\u0600' && char <= '\u06ff').length
    const latinLetters = (text: string) => [...text].filter((char) => /[a-z]/i.test(char)).length
    const arabicText = arabic.choices[0]!.message.content!
    const englishText = english.choices[0]!.message.content!
    expect(arabicLetters(arabicText)).toBeGreaterThan(10)
    expect(latinLetters(arabicText)).toBe(0)
    expect(arabicLetters(englishText)).toBe(0)
    expect(arabic.usage.completion_tokens).toBeLessThanOrEqual(64)
  })

  test('waits ttftMs plus interTokenMs per token before answering', async () => {
    const started = performance.now()

    await simulator.chat(chatRequest({ max_tokens: 4 }), simulatorCall({ ttftMs: 20, interTokenMs: 10 }))

    expect(performance.now() - started).toBeGreaterThanOrEqual(45)
  })
})

describe('SimulatorProvider.chat in JSON mode', () => {
  const citySchema = {
    type: 'object',
    properties: { city: { type: 'string' }, population: { type: 'integer', minimum: 1 }, rivers: { type: 'array', items: { type: 'string' } }, coastal: { type: 'boolean' } },
    required: ['city', 'population', 'rivers', 'coastal'],
    additionalProperties: false,
  }
  const jsonSchema = { type: 'json_schema' as const, json_schema: { name: 'city', schema: citySchema, strict: true } }

  test('answers json_object with a JSON object, the natural answer under "answer", a token for each four characters', async () => {
    const { choices, usage } = await simulator.chat(chatRequest({ response_format: { type: 'json_object' } }), simulatorCall())

    const content = choices[0]!.message.content!
    const parsed = JSON.parse(content)
    expect(Object.keys(parsed)).toEqual(['answer'])
    expect(parsed.answer).toMatch(/^\S.{40,}/)
    expect(choices[0]!.finish_reason).toBe('stop')
    expect(usage.completion_tokens).toBe(Math.ceil(content.length / 4))
  })

  test('answers json_schema with an object that fits the schema, the same for the same messages', async () => {
    const first = await simulator.chat(chatRequest({ response_format: jsonSchema }), simulatorCall({ requestId: 'req_a' }))
    const again = await simulator.chat(chatRequest({ response_format: jsonSchema }), simulatorCall({ requestId: 'req_b' }))

    const parsed = JSON.parse(first.choices[0]!.message.content!)
    expect(Object.keys(parsed)).toEqual(['city', 'population', 'rivers', 'coastal'])
    expect([typeof parsed.city, Number.isInteger(parsed.population) && parsed.population >= 1, Array.isArray(parsed.rivers) && parsed.rivers.every((river: unknown) => typeof river === 'string'), typeof parsed.coastal]).toEqual(['string', true, true, 'boolean'])
    expect(again.choices[0]!.message.content).toBe(first.choices[0]!.message.content)
  })

  test('cuts JSON at max_tokens with finish_reason length, as a model does', async () => {
    const full = (await simulator.chat(chatRequest({ response_format: jsonSchema }), simulatorCall())).choices[0]!.message.content!

    const cut = await simulator.chat(chatRequest({ response_format: jsonSchema, max_tokens: 3 }), simulatorCall())

    expect(cut.choices[0]!.message.content).toBe(full.slice(0, 12))
    expect([cut.choices[0]!.finish_reason, cut.usage.completion_tokens]).toEqual(['length', 3])
  })

  test('streams the same JSON as it answers whole', async () => {
    const whole = (await simulator.chat(chatRequest({ response_format: jsonSchema }), simulatorCall())).choices[0]!.message.content!

    const chunks = await collect(await simulator.streamChat(chatRequest({ response_format: jsonSchema, stream: true }), simulatorCall()))

    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(whole)
  })
})

describe('SimulatorProvider.chat with logprobs', () => {
  test('gives each content token its log probability and, with top_logprobs, the likeliest tokens at its place, the same every time', async () => {
    const { choices, usage } = await simulator.chat(chatRequest({ logprobs: true, top_logprobs: 3 }), simulatorCall())
    const again = await simulator.chat(chatRequest({ logprobs: true, top_logprobs: 3 }), simulatorCall())

    const tokens = (choices[0]!.logprobs as { content: Array<{ token: string; logprob: number; bytes: number[]; top_logprobs: Array<{ token: string; logprob: number }> }> }).content
    expect(tokens.map((entry) => entry.token).join('')).toBe(choices[0]!.message.content!)
    expect(tokens).toHaveLength(usage.completion_tokens)
    for (const entry of tokens) {
      expect(entry.logprob).toBeLessThanOrEqual(0)
      expect(entry.bytes).toEqual(Array.from(new TextEncoder().encode(entry.token)))
      expect(entry.top_logprobs).toHaveLength(3)
      expect(entry.top_logprobs[0]).toMatchObject({ token: entry.token, logprob: entry.logprob })
      expect(new Set(entry.top_logprobs.map((top) => top.token)).size).toBe(3)
      expect(entry.top_logprobs.map((top) => top.logprob)).toEqual([...entry.top_logprobs.map((top) => top.logprob)].sort((a, b) => b - a))
    }
    expect(again.choices[0]!.logprobs).toEqual(choices[0]!.logprobs)
  })

  test('lists no other tokens without top_logprobs, none at all without logprobs, and no content ones for tool calls', async () => {
    const plain = await simulator.chat(chatRequest({ logprobs: true }), simulatorCall())
    const without = await simulator.chat(chatRequest(), simulatorCall())
    const calls = await simulator.chat(chatRequest({ logprobs: true, tools: [weatherTool], tool_choice: 'required' }), simulatorCall())

    expect((plain.choices[0]!.logprobs as { content: Array<{ top_logprobs: unknown[] }> }).content.every((entry) => entry.top_logprobs.length === 0)).toBe(true)
    expect(without.choices[0]!.logprobs).toBeNull()
    expect(calls.choices[0]!.logprobs).toEqual({ content: null, refusal: null })
  })

  test('streams each content token with its log probability', async () => {
    const whole = await simulator.chat(chatRequest({ logprobs: true, top_logprobs: 2 }), simulatorCall())

    const chunks = await collect(await simulator.streamChat(chatRequest({ logprobs: true, top_logprobs: 2, stream: true }), simulatorCall()))

    const streamed = chunks.flatMap((chunk) => (chunk.choices[0]?.logprobs as { content: unknown[] } | null)?.content ?? [])
    expect(streamed).toEqual((whole.choices[0]!.logprobs as { content: unknown[] }).content)
    const tokenChunks = chunks.filter((chunk) => chunk.choices[0]?.delta.content)
    expect(tokenChunks.every((chunk) => (chunk.choices[0]!.logprobs as { content: Array<{ token: string }> }).content[0]!.token === chunk.choices[0]!.delta.content)).toBe(true)
  })
})

describe('SimulatorProvider.chat with tools', () => {
  test('calls a tool when tool_choice is required, with JSON arguments from its schema', async () => {
    const { choices, usage } = await simulator.chat(chatRequest({ tools: [weatherTool], tool_choice: 'required' }), simulatorCall())

    const [choice] = choices
    expect(choice!.finish_reason).toBe('tool_calls')
    expect(choice!.message.content).toBeNull()
    expect(choice!.message.tool_calls).toEqual([{ id: expect.stringMatching(/^call_\w+$/), type: 'function', function: { name: 'get_weather', arguments: expect.any(String) } }])
    const args = JSON.parse(choice!.message.tool_calls![0]!.function.arguments)
    expect(Object.keys(args)).toEqual(['city', 'unit', 'days'])
    expect(typeof args.city).toBe('string')
    expect(['celsius', 'fahrenheit']).toContain(args.unit)
    expect(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7).toBe(true)
    expect(usage.completion_tokens).toBeGreaterThan(1)
  })

  test('calls the function tool_choice names', async () => {
    const { choices } = await simulator.chat(
      chatRequest({ tools: [weatherTool, stockTool], tool_choice: { type: 'function', function: { name: 'get_stock_price' } } }),
      simulatorCall(),
    )

    expect(choices[0]!.message.tool_calls!.map((call) => call.function.name)).toEqual(['get_stock_price'])
  })

  test('rejects a tool_choice that names a function missing from tools', async () => {
    const body = chatRequest({ tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } } })

    const error = await simulator.chat(body, simulatorCall()).catch((caught: unknown) => caught)

    expect(error).toBeInstanceOf(GatewayError)
    expect(error).toMatchObject({ code: 'invalid_request', param: 'tool_choice' })
  })

  test('with auto, calls the tools the last user message names, in parallel unless told not to', async () => {
    const content = 'Use get_weather for Cairo and get_stock_price for COMI.'

    const parallel = await simulator.chat(chatRequest({ content, tools: [weatherTool, stockTool] }), simulatorCall())
    const single = await simulator.chat(chatRequest({ content, tools: [weatherTool, stockTool], parallel_tool_calls: false }), simulatorCall())

    expect(parallel.choices[0]!.message.tool_calls!.map((call) => call.function.name)).toEqual(['get_weather', 'get_stock_price'])
    expect(new Set(parallel.choices[0]!.message.tool_calls!.map((call) => call.id)).size).toBe(2)
    expect(single.choices[0]!.message.tool_calls!.map((call) => call.function.name)).toEqual(['get_weather'])
  })

  test('answers with text under auto when no tool is named, under none, and after a tool result', async () => {
    const afterResult: ChatCompletionRequest = {
      model: chatModel!.id,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'Use get_weather for Cairo.' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Cairo"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":31}' },
      ],
    }

    const answers = await Promise.all([
      simulator.chat(chatRequest({ tools: [weatherTool] }), simulatorCall()),
      simulator.chat(chatRequest({ content: 'Use get_weather.', tools: [weatherTool], tool_choice: 'none' }), simulatorCall()),
      simulator.chat(afterResult, simulatorCall()),
    ])

    for (const answer of answers) {
      expect(answer.choices[0]!.finish_reason).toBe('stop')
      expect(answer.choices[0]!.message.tool_calls).toBeUndefined()
    }
  })

  test('cuts tool arguments at max_tokens with finish_reason length', async () => {
    const { choices, usage } = await simulator.chat(chatRequest({ tools: [weatherTool], tool_choice: 'required', max_tokens: 3 }), simulatorCall())

    expect(choices[0]!.finish_reason).toBe('length')
    expect(usage.completion_tokens).toBe(3)
  })
})

describe('SimulatorProvider.streamChat', () => {
  test('streams a role chunk, content chunks, a final chunk and a usage chunk that match chat()', async () => {
    const body = chatRequest()
    const whole = await simulator.chat(body, simulatorCall({ requestId: 'req_s' }))

    const chunks = await collect(await simulator.streamChat({ ...body, stream: true }, simulatorCall({ requestId: 'req_s' })))

    const envelope = { id: 'chatcmpl-req_s', object: 'chat.completion.chunk' as const, created: expect.any(Number), model: chatModel!.id }
    expect(chunks[0]).toEqual({ ...envelope, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] })
    const content = chunks.slice(1, -2)
    for (const chunk of content) expect(chunk).toEqual({ ...envelope, choices: [{ index: 0, delta: { content: expect.any(String) }, logprobs: null, finish_reason: null }] })
    expect(content.length).toBe(whole.usage.completion_tokens)
    expect(chunks.at(-2)).toEqual({ ...envelope, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] })
    expect(chunks.at(-1)).toEqual({ ...envelope, choices: [], usage: whole.usage })
    expect(streamedText(chunks)).toBe(whole.choices[0]!.message.content!)
  })

  test('streams n choices, each opened with a role chunk and closed with its finish reason', async () => {
    const chunks = await collect(await simulator.streamChat(chatRequest({ n: 3, max_tokens: 6 }), simulatorCall()))

    for (const index of [0, 1, 2]) {
      const own = chunks.filter((chunk) => chunk.choices[0]?.index === index)
      expect(own[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' })
      expect(own.at(-1)!.choices[0]).toEqual({ index, delta: {}, logprobs: null, finish_reason: 'length' })
      expect(own.filter((chunk) => chunk.choices[0]!.delta.content).length).toBe(6)
    }
    expect(chunks.at(-1)!.usage!.completion_tokens).toBe(18)
  })

  test('streams the stop-cut text and finishes with stop', async () => {
    const full = (await simulator.chat(chatRequest(), simulatorCall())).choices[0]!.message.content!
    const stop = full.split(' ')[3]!

    const chunks = await collect(await simulator.streamChat(chatRequest({ stop }), simulatorCall()))

    expect(streamedText(chunks)).toBe(full.slice(0, full.indexOf(stop)))
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop')
  })

  test('streams tool calls in the wire format: a header delta per call, then argument fragments', async () => {
    const body = chatRequest({ content: 'Use get_weather and get_stock_price.', tools: [weatherTool, stockTool] })
    const whole = await simulator.chat(body, simulatorCall())
    const calls = whole.choices[0]!.message.tool_calls!

    const chunks = await collect(await simulator.streamChat(body, simulatorCall()))

    const deltas = chunks.slice(0, -1).map((chunk) => chunk.choices[0]!.delta)
    expect(deltas[0]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ index: 0, id: calls[0]!.id, type: 'function', function: { name: 'get_weather', arguments: '' } }],
    })
    const secondHeader = deltas.findIndex((delta) => delta.tool_calls?.[0]?.id === calls[1]!.id)
    expect(deltas[secondHeader]).toEqual({ tool_calls: [{ index: 1, id: calls[1]!.id, type: 'function', function: { name: 'get_stock_price', arguments: '' } }] })
    const fragments = (from: number, to: number, index: number) =>
      deltas.slice(from, to).map((delta) => {
        expect(delta).toEqual({ tool_calls: [{ index, function: { arguments: expect.any(String) } }] })
        return delta.tool_calls![0]!.function!.arguments
      })
    expect(fragments(1, secondHeader, 0).join('')).toBe(calls[0]!.function.arguments)
    expect(fragments(secondHeader + 1, -1, 1).join('')).toBe(calls[1]!.function.arguments)
    expect(chunks.at(-2)!.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' })
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: whole.usage })
  })

  test('never yields to timers between chunks when the delays are zero', async () => {
    let timerRan = false
    setTimeout(() => {
      timerRan = true
    }, 0)

    const chunks = await collect(await simulator.streamChat(chatRequest({ n: 2 }), simulatorCall()))

    expect(chunks.length).toBeGreaterThan(20)
    expect(timerRan).toBe(false)
  })

  test('waits ttftMs before the first chunk', async () => {
    const started = performance.now()
    const stream = (await simulator.streamChat(chatRequest(), simulatorCall({ ttftMs: 40 })))[Symbol.asyncIterator]()

    await stream.next()

    expect(performance.now() - started).toBeGreaterThanOrEqual(35)
  })

  test('hands out at once the chunks due without a wait: the rest of the answer with no delays, the current round with one', async () => {
    // Compared without `created`, which a second's turn could change between streams.
    const shape = (chunks: ChatCompletionChunk[]) => chunks.map(({ choices, usage }) => ({ choices, usage }))
    const all = shape(await collect(await simulator.streamChat(chatRequest(), simulatorCall())))
    const quick = (await simulator.streamChat(chatRequest(), simulatorCall()))[Symbol.asyncIterator]() as ChatChunkIterator
    const paced = (await simulator.streamChat(chatRequest(), simulatorCall({ interTokenMs: 60_000 })))[Symbol.asyncIterator]() as ChatChunkIterator

    const quickFirst = await quick.next()
    const quickRest = quick.ready!()
    const quickEnd = await quick.next()
    const pacedFirst = await paced.next()
    const pacedRound = paced.ready!()
    const pacedWaiting = paced.ready!()
    await paced.return!()

    expect(shape([quickFirst.value!, ...quickRest])).toEqual(all)
    expect(quickEnd.done).toBe(true)
    expect(shape([pacedFirst.value!, ...pacedRound])).toEqual(all.slice(0, 2))
    expect(pacedWaiting).toEqual([])
  })

  test('stops promptly with the abort reason when the signal aborts mid-stream', async () => {
    const controller = new AbortController()
    const stream = (await simulator.streamChat(chatRequest(), simulatorCall({ signal: controller.signal, interTokenMs: 60_000 })))[Symbol.asyncIterator]()
    await stream.next()
    await stream.next()
    const pending = stream.next()
    const reason = new Error('client went away')
    const started = performance.now()

    controller.abort(reason)

    expect(await pending.catch((caught: unknown) => caught)).toBe(reason)
    expect(performance.now() - started).toBeLessThan(1_000)
    expect((await stream.next()).done).toBe(true)
  })

  test('stops before the first token when aborted during ttft, and refuses an aborted call', async () => {
    const controller = new AbortController()
    const stream = (await simulator.streamChat(chatRequest(), simulatorCall({ signal: controller.signal, ttftMs: 60_000 })))[Symbol.asyncIterator]()
    const pending = stream.next()

    controller.abort(new Error('gone'))

    expect(await pending.catch((caught: unknown) => (caught as Error).message)).toBe('gone')
    expect(await simulator.streamChat(chatRequest(), simulatorCall({ signal: controller.signal })).catch((caught: unknown) => (caught as Error).message)).toBe('gone')
  })
})

describe('SimulatorProvider.embed', () => {
  const embedCall = () => simulatorCall({}, embeddingModel!)

  test("returns unit vectors of the model's dimensions, or of the requested ones", async () => {
    const full = await simulator.embed(textInput(['The Nile is long.', 'نهر النيل طويل']), null, embedCall())
    const short = await simulator.embed(textInput(['The Nile is long.']), 256, embedCall())

    expect(full.vectors.map((vector) => vector.length)).toEqual([1024, 1024])
    expect(short.vectors[0]!.length).toBe(256)
    for (const vector of [...full.vectors, ...short.vectors]) expect(norm(vector)).toBeCloseTo(1, 5)
  })

  test('is deterministic', async () => {
    const first = await simulator.embed(textInput(['same text']), 64, embedCall())
    const second = await simulator.embed(textInput(['same text']), 64, embedCall())

    expect(Array.from(second.vectors[0]!)).toEqual(Array.from(first.vectors[0]!))
  })

  test('gives similar texts more similar vectors', async () => {
    const { vectors } = await simulator.embed(
      textInput(['The cat sat on the mat.', 'The cat sat on a mat!', 'A cat was sitting on the mat.', 'Quarterly revenue grew by eight percent.']),
      null,
      embedCall(),
    )

    const [anchor, nearDuplicate, paraphrase, unrelated] = vectors
    expect(cosine(anchor!, nearDuplicate!)).toBeGreaterThan(cosine(anchor!, paraphrase!))
    expect(cosine(anchor!, paraphrase!)).toBeGreaterThan(cosine(anchor!, unrelated!) + 0.2)
  })

  test('ignores case, punctuation and Arabic diacritics', async () => {
    const { vectors } = await simulator.embed(textInput(['Hello, World!', 'hello world', 'كَتَبَ الطالبُ', 'كتب الطالب']), null, embedCall())

    expect(cosine(vectors[0]!, vectors[1]!)).toBeCloseTo(1, 5)
    expect(cosine(vectors[2]!, vectors[3]!)).toBeCloseTo(1, 5)
  })

  test('counts the tokens the input counts as: the ids sent, or the estimate of the text', async () => {
    const ids = await simulator.embed({ items: ['The Nile is long.', 'نهر النيل طويل'], tokens: 13 }, null, embedCall())
    const text = await simulator.embed(textInput(['The Nile is long.', 'نهر النيل طويل']), null, embedCall())

    expect(ids.promptTokens).toBe(13)
    expect(text.promptTokens).toBe(estimateTextTokens('The Nile is long.') + estimateTextTokens('نهر النيل طويل'))
  })
})
