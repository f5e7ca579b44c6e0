import { afterEach, describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import type { ChatCompletionChunk } from '@nilegate/shared/schemas/chat'
import { OpenAICompatibleProvider } from '../../../server/adapters/providers/openai-compatible'
import { maxEventChars } from '../../../server/adapters/providers/upstream-chunk-stream'
import { maxAnswerBytes, readCapped } from '../../../server/adapters/providers/upstream-exchange'
import { estimatePromptTokens, estimateTextTokens } from '../../../server/core/estimate-tokens'
import type { ChatChunkIterator } from '../../../server/core/ports'
import { textInput } from '../../support/embedding-input'
import {
  catalogModelId,
  ControlledStream,
  doneFrame,
  type FakeUpstream,
  jsonResponse,
  sseFrame,
  startFakeUpstream,
  upstreamCall,
  upstreamChatRequest,
  upstreamChunk,
  upstreamCompletion,
  upstreamStreamText,
  upstreamUsageChunk,
  type UpstreamHandler,
} from '../../support/fake-upstream'

const provider = new OpenAICompatibleProvider()
let upstreams: FakeUpstream[] = []

function fakeUpstream(handler: UpstreamHandler): FakeUpstream {
  const upstream = startFakeUpstream(handler)
  upstreams.push(upstream)
  return upstream
}

afterEach(() => {
  for (const upstream of upstreams) upstream.stop()
  upstreams = []
})

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error('expected a rejection'),
    (error: unknown) => error,
  )
}

function contents(chunks: ChatCompletionChunk[]): string {
  return chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')
}

/** A stream the test writes to, served for every request. */
function controlledUpstream(): { upstream: FakeUpstream; stream: ControlledStream } {
  const stream = new ControlledStream()
  return { upstream: fakeUpstream(() => stream.response()), stream }
}

describe('OpenAICompatibleProvider.chat', () => {
  test("forwards the client's body with the upstream model name and the request id, and renames the answer", async () => {
    const upstream = fakeUpstream(() => jsonResponse(upstreamCompletion('Hi there!')))
    const body = upstreamChatRequest({ temperature: 0.2, top_k: 5, stream_options: { include_usage: true } })

    const completion = await provider.chat(body, upstreamCall(upstream.baseUrl, { requestId: 'req_abc' }))

    expect(completion).toMatchObject({ model: catalogModelId, choices: [{ message: { content: 'Hi there!' } }], usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 } })
    const [received] = upstream.requests
    expect(received!.path).toBe('/v1/chat/completions')
    expect(received!.body).toEqual({ model: 'upstream-model', messages: body.messages, temperature: 0.2, top_k: 5, max_tokens: 1024, stream: false })
    expect(received!.headers.get('x-request-id')).toBe('req_abc')
    expect(received!.headers.get('content-type')).toBe('application/json')
    expect(received!.headers.get('authorization')).toBeNull()
  })

  test('leaves out top_logprobs without logprobs and tool_choice without tools, which vLLM refuses, and keeps them beside what they need', async () => {
    const upstream = fakeUpstream((request) => (request.body.stream ? new Response(upstreamStreamText(['Hi'])) : jsonResponse(upstreamCompletion('Hi'))))
    const tool = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }

    await provider.chat(upstreamChatRequest({ top_logprobs: 3, tool_choice: 'auto' }), upstreamCall(upstream.baseUrl))
    await collect(await provider.streamChat(upstreamChatRequest({ stream: true, top_logprobs: 3, tool_choice: 'required', tools: [] }), upstreamCall(upstream.baseUrl)))
    await provider.chat(upstreamChatRequest({ logprobs: true, top_logprobs: 3, tools: [tool], tool_choice: 'auto' }), upstreamCall(upstream.baseUrl))

    const sent = upstream.requests.map(({ body }) => [body.top_logprobs, body.tool_choice])
    expect(sent).toEqual([
      [undefined, undefined],
      [undefined, undefined],
      [3, 'auto'],
    ])
  })

  test("bounds a request without a token limit by the model's max output, and keeps a client's own limit", async () => {
    const upstream = fakeUpstream(() => jsonResponse(upstreamCompletion('Hi')))

    await provider.chat(upstreamChatRequest({ max_completion_tokens: 7 }), upstreamCall(upstream.baseUrl))
    await provider.chat(upstreamChatRequest({ max_tokens: 9 }), upstreamCall(upstream.baseUrl))

    expect(upstream.requests.map((request) => [request.body.max_tokens, request.body.max_completion_tokens])).toEqual([[undefined, 7], [9, undefined]])
  })

  test('sends the API key from the environment variable the deployment names', async () => {
    process.env.NILEGATE_TEST_UPSTREAM_KEY = 'sk-upstream-secret'
    const upstream = fakeUpstream(() => jsonResponse(upstreamCompletion('ok')))

    await provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { apiKeyEnv: 'NILEGATE_TEST_UPSTREAM_KEY' }))

    expect(upstream.requests[0]!.headers.get('authorization')).toBe('Bearer sk-upstream-secret')
    delete process.env.NILEGATE_TEST_UPSTREAM_KEY
  })

  test('refuses to call an upstream whose key variable is unset', async () => {
    const upstream = fakeUpstream(() => jsonResponse(upstreamCompletion('ok')))

    const error = await caught(provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { apiKeyEnv: 'NILEGATE_TEST_UNSET_KEY' })))

    expect(error).toMatchObject({ code: 'service_unavailable' })
    expect(upstream.requests).toHaveLength(0)
  })

  test('estimates usage when the upstream reports none', async () => {
    const upstream = fakeUpstream(() => jsonResponse(upstreamCompletion('Twelve chars', null)))
    const body = upstreamChatRequest()

    const { usage } = await provider.chat(body, upstreamCall(upstream.baseUrl))

    const promptTokens = estimatePromptTokens(body.messages)
    expect(usage).toEqual({ prompt_tokens: promptTokens, completion_tokens: estimateTextTokens('Twelve chars'), total_tokens: promptTokens + 3 })
  })

  test('estimates usage when the upstream reports counts it cannot bill: fractional, negative, beyond 32 bits, or not numbers', async () => {
    const reports = [
      { prompt_tokens: 1.5, completion_tokens: 3 },
      { prompt_tokens: 9, completion_tokens: -3 },
      { prompt_tokens: 2 ** 31, completion_tokens: 3 },
      { prompt_tokens: '9', completion_tokens: 3 },
    ]
    let next = 0
    const upstream = fakeUpstream(() => jsonResponse({ ...upstreamCompletion('Twelve chars', null), usage: reports[next++] }))
    const body = upstreamChatRequest()
    const estimated = { prompt_tokens: estimatePromptTokens(body.messages), completion_tokens: estimateTextTokens('Twelve chars') }

    const usages = []
    for (const _ of reports) usages.push((await provider.chat(body, upstreamCall(upstream.baseUrl))).usage)

    expect(usages).toEqual(Array(reports.length).fill({ ...estimated, total_tokens: estimated.prompt_tokens + estimated.completion_tokens }))
  })

  test("passes on a billable usage with the upstream's details, and sums a total that is not a count", async () => {
    const reports = [
      { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 1 } },
      { prompt_tokens: 9, completion_tokens: 3, total_tokens: 'twelve' },
    ]
    let next = 0
    const upstream = fakeUpstream(() => jsonResponse({ ...upstreamCompletion('Hi', null), usage: reports[next++] }))

    const first = await provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl))
    const second = await provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl))

    expect(first.usage).toEqual(reports[0] as typeof first.usage)
    expect(second.usage).toEqual({ prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 })
  })

  test('rejects an answer that is not a completion', async () => {
    const upstream = fakeUpstream(() => jsonResponse({ id: 'x', object: 'chat.completion' }))

    const error = await caught(provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))

    expect(error).toMatchObject({ code: 'no_healthy_backends' })
  })

  test('rejects an answer whose choices are not messages', async () => {
    const choices = [[null], [{ index: 0, message: null, finish_reason: 'stop' }], [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [7] }, finish_reason: 'tool_calls' }]]
    let next = 0
    const upstream = fakeUpstream(() => jsonResponse({ ...upstreamCompletion('unused'), choices: choices[next++] }))

    const errors = []
    for (const _ of choices) errors.push(await caught(provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl))))

    expect(errors).toEqual(Array(choices.length).fill(expect.objectContaining({ code: 'no_healthy_backends', message: 'The upstream sent a completion whose choices are not messages.' })))
  })

  test('gives up at the total timeout, aborting the upstream request', async () => {
    const upstream = fakeUpstream(async (request) => {
      await request.aborted
      return jsonResponse(upstreamCompletion('too late'))
    })

    const error = await caught(provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { timeouts: { totalMs: 100 } })))

    expect(error).toBeInstanceOf(GatewayError)
    expect(error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('total timeout (100 ms)') })
    await upstream.requests[0]!.aborted
  })
})

describe('OpenAICompatibleProvider error mapping', () => {
  const cases: Array<{ status: number; body: unknown; headers?: Record<string, string>; code: string; param?: string | null; message?: string }> = [
    {
      status: 400,
      body: { error: { message: "upstream-model's maximum context length is 8192 tokens.", type: 'BadRequestError', param: 'messages', code: 400 } },
      code: 'invalid_request',
      param: 'messages',
      message: `The model rejected the request: ${catalogModelId}'s maximum context length is 8192 tokens.`,
    },
    { status: 422, body: { detail: [{ loc: ['body', 'temperature'], msg: 'Input should be less than or equal to 2' }] }, code: 'invalid_request', param: 'temperature' },
    { status: 404, body: { error: { message: 'The model `upstream-model` does not exist.', type: 'NotFoundError', code: 404 } }, code: 'invalid_request', param: 'model' },
    { status: 404, body: 'Not Found', code: 'no_healthy_backends' },
    { status: 401, body: { error: { message: 'Invalid key sk-upstream-secret' } }, code: 'service_unavailable', message: "The upstream rejected the gateway's credentials." },
    { status: 403, body: 'Forbidden', code: 'service_unavailable' },
    { status: 408, body: '', code: 'engine_unavailable' },
    { status: 429, body: { error: 'too busy' }, headers: { 'retry-after': '3' }, code: 'engine_unavailable' },
    { status: 503, body: '', code: 'engine_unavailable' },
    { status: 500, body: { error: 'Model is loading, please retry' }, code: 'engine_unavailable' },
    { status: 500, body: { error: { message: 'CUDA out of memory at 10.0.0.7' } }, code: 'no_healthy_backends', message: 'The upstream failed (HTTP 500).' },
    { status: 502, body: '<html>Bad Gateway</html>', code: 'no_healthy_backends' },
  ]

  for (const { status, body, headers, code, param, message } of cases) {
    test(`maps HTTP ${status} ${JSON.stringify(body).slice(0, 40)} to ${code}`, async () => {
      const upstream = fakeUpstream(() => (typeof body === 'string' ? new Response(body, { status, headers }) : jsonResponse(body, status, headers)))

      const plain = await caught(provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))
      const streamed = await caught(provider.streamChat(upstreamChatRequest({ stream: true }), upstreamCall(upstream.baseUrl)))

      for (const error of [plain, streamed]) {
        expect(error).toBeInstanceOf(GatewayError)
        expect(error).toMatchObject({ code })
        if (param !== undefined) expect((error as GatewayError).param).toBe(param)
        if (message !== undefined) expect((error as GatewayError).message).toBe(message)
        expect((error as GatewayError).message).not.toContain('127.0.0.1')
        expect((error as GatewayError).message).not.toContain('sk-upstream-secret')
        expect((error as GatewayError).message).not.toContain('upstream-model')
      }
    })
  }

  describe('an upstream whose chat template knows no developer role', () => {
    const refusal = { error: { message: 'Conversation roles must be system, user or assistant; got developer', type: 'BadRequestError', code: 400 } }
    /** Refuses any request with a developer message, as a Mistral or older Llama template does; answers the rest. */
    function templateWithoutDeveloper(): FakeUpstream {
      return fakeUpstream((request) => {
        const roles = (request.body.messages as Array<{ role: string }>).map((message) => message.role)
        if (roles.includes('developer')) return jsonResponse(refusal, 400)
        return request.body.stream ? new Response(upstreamStreamText(['Hi']), { headers: { 'content-type': 'text/event-stream' } }) : jsonResponse(upstreamCompletion('Hi'))
      })
    }
    const withDeveloper = upstreamChatRequest({ messages: [{ role: 'developer', content: 'Answer briefly.' }, { role: 'user', content: 'Hello' }] })

    test('gets the request again with developer messages as system, whole and streamed', async () => {
      const upstream = templateWithoutDeveloper()

      const whole = await provider.chat(withDeveloper, upstreamCall(upstream.baseUrl))
      const streamed = contents(await collect(await provider.streamChat({ ...withDeveloper, stream: true }, upstreamCall(upstream.baseUrl))))

      expect([whole.choices[0]!.message.content, streamed]).toEqual(['Hi', 'Hi'])
      expect(upstream.requests.map((request) => (request.body.messages as Array<{ role: string }>).map((message) => message.role))).toEqual([
        ['developer', 'user'],
        ['system', 'user'],
        ['developer', 'user'],
        ['system', 'user'],
      ])
      expect(upstream.requests[1]!.body.messages[0]).toEqual({ role: 'system', content: 'Answer briefly.' })
    })

    test("a deployment set to developer_role 'system' sends them as system from the first try, whole and streamed", async () => {
      const upstream = templateWithoutDeveloper()
      const call = () => upstreamCall(upstream.baseUrl, { developerRole: 'system' })

      const whole = await provider.chat(withDeveloper, call())
      const streamed = contents(await collect(await provider.streamChat({ ...withDeveloper, stream: true }, call())))

      expect([whole.choices[0]!.message.content, streamed]).toEqual(['Hi', 'Hi'])
      expect(upstream.requests.map((request) => (request.body.messages as Array<{ role: string }>).map((message) => message.role))).toEqual([
        ['system', 'user'],
        ['system', 'user'],
      ])
      expect(upstream.requests[0]!.body.messages[0]).toEqual({ role: 'system', content: 'Answer briefly.' })
      expect(withDeveloper.messages[0]!.role).toBe('developer')
    })

    test('asks once when the request has no developer message, or the refusal is not about roles', async () => {
      const aboutRoles = fakeUpstream(() => jsonResponse(refusal, 400))
      const aboutOther = fakeUpstream(() => jsonResponse({ error: { message: 'temperature must be at most 1', type: 'BadRequestError', code: 400 } }, 400))

      const noDeveloper = await caught(provider.chat(upstreamChatRequest(), upstreamCall(aboutRoles.baseUrl)))
      const other = await caught(provider.chat(withDeveloper, upstreamCall(aboutOther.baseUrl)))

      expect([noDeveloper, other]).toMatchObject([{ code: 'invalid_request' }, { code: 'invalid_request', message: 'The model rejected the request: temperature must be at most 1' }])
      expect([aboutRoles.requests.length, aboutOther.requests.length]).toEqual([1, 1])
    })
  })

  test("passes on the upstream's Retry-After for a busy engine", async () => {
    const upstream = fakeUpstream(() => jsonResponse({ error: 'busy' }, 429, { 'retry-after': '3' }))

    const error = await caught(provider.chat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))

    expect(error).toMatchObject({ code: 'engine_unavailable', retryAfterS: 3 })
  })

  test('maps a refused connection and an unknown host to no_healthy_backends', async () => {
    const closed = fakeUpstream(() => new Response())
    const refusedUrl = closed.baseUrl
    closed.stop()

    const refused = await caught(provider.streamChat(upstreamChatRequest(), upstreamCall(refusedUrl)))
    const unknownHost = await caught(provider.chat(upstreamChatRequest(), upstreamCall('http://upstream.invalid/v1')))

    expect(refused).toMatchObject({ code: 'no_healthy_backends', message: 'The upstream could not be reached.' })
    expect(unknownHost).toMatchObject({ code: 'no_healthy_backends', message: 'The upstream could not be reached.' })
  })
})

describe('OpenAICompatibleProvider.streamChat', () => {
  test('relays every chunk with the catalog model name, always asking upstream for usage', async () => {
    const upstream = fakeUpstream(() => new Response(upstreamStreamText(['Hel', 'lo']), { headers: { 'content-type': 'text/event-stream' } }))
    const body = upstreamChatRequest({ stream: true, stream_options: { include_obfuscation: false }, top_k: 3 })

    const chunks = await collect(await provider.streamChat(body, upstreamCall(upstream.baseUrl)))

    expect(chunks.map((chunk) => chunk.model)).toEqual(Array(5).fill(catalogModelId))
    expect(contents(chunks)).toBe('Hello')
    expect(chunks[3]!.choices[0]!.finish_reason).toBe('stop')
    expect(chunks[4]).toMatchObject({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } })
    expect(upstream.requests[0]!.body).toEqual({
      model: 'upstream-model',
      messages: body.messages,
      top_k: 3,
      max_tokens: 1024,
      stream: true,
      stream_options: { include_obfuscation: false, include_usage: true },
    })
    expect(upstream.requests[0]!.headers.get('accept')).toBe('text/event-stream')
  })

  test('hands out a usage chunk whose counts cannot be billed with usage null, so that the relay estimates it', async () => {
    const frames = [sseFrame(upstreamChunk({ role: true, content: 'Hi' })), sseFrame(upstreamChunk({ finish: 'stop' })), sseFrame({ ...upstreamUsageChunk(9, 2), usage: { prompt_tokens: 9, completion_tokens: 2.5 } }), doneFrame]
    const upstream = fakeUpstream(() => new Response(frames.join(''), { headers: { 'content-type': 'text/event-stream' } }))

    const chunks = await collect(await provider.streamChat(upstreamChatRequest({ stream: true }), upstreamCall(upstream.baseUrl)))

    expect(chunks.map((chunk) => chunk.usage ?? null)).toEqual([null, null, null])
  })

  test('hands out each chunk as soon as it arrives, before the upstream sends the next', async () => {
    const { upstream, stream } = controlledUpstream()
    const chunks = (await provider.streamChat(upstreamChatRequest({ stream: true }), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()

    stream.send(sseFrame(upstreamChunk({ role: true, content: '' })))
    const first = await chunks.next()
    stream.send(sseFrame(upstreamChunk({ content: 'one' })))
    const second = await chunks.next()
    stream.send(sseFrame(upstreamChunk({ finish: 'stop' })) + doneFrame)
    const third = await chunks.next()
    const end = await chunks.next()

    expect(first.value!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' })
    expect(second.value!.choices[0]!.delta).toEqual({ content: 'one' })
    expect(third.value!.choices[0]!.finish_reason).toBe('stop')
    expect(end.done).toBe(true)
  })

  test('hands out at once the chunks that arrived together, and a failure after them only from next()', async () => {
    const { upstream, stream } = controlledUpstream()
    const chunks: ChatChunkIterator = (await provider.streamChat(upstreamChatRequest({ stream: true }), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()

    stream.send(sseFrame(upstreamChunk({ role: true, content: '' })) + sseFrame(upstreamChunk({ content: 'one' })) + sseFrame(upstreamChunk({ content: 'two' })))
    const first = await chunks.next()
    const together = chunks.ready!()
    const nothingMore = chunks.ready!()
    stream.send(sseFrame(upstreamChunk({ content: 'three' })) + sseFrame({ error: { message: 'engine crashed', type: 'InternalServerError', param: null, code: 500 } }))
    const third = await chunks.next()
    const beforeFailure = chunks.ready!()
    const failure = await caught(chunks.next())

    expect(first.value!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' })
    expect(together.map((chunk) => chunk.choices[0]!.delta.content)).toEqual(['one', 'two'])
    expect(nothingMore).toEqual([])
    expect([third.value!.choices[0]!.delta.content, beforeFailure]).toEqual(['three', []])
    expect(failure).toMatchObject({ code: 'no_healthy_backends' })
  })

  test('parses SSE split at awkward byte boundaries, with CRLF, CR, comments and multi-byte text', async () => {
    const { upstream, stream } = controlledUpstream()
    const text = [
      ': keep-alive\r\n\r\n',
      `data: ${JSON.stringify(upstreamChunk({ role: true, content: '' }))}\r\n\r\n`,
      `data: ${JSON.stringify(upstreamChunk({ content: 'مرحبا بالعالم' }))}\r\r`,
      `event: message\nid: 7\ndata: ${JSON.stringify(upstreamChunk({ content: ' done' }))}\n\n`,
      `data:${JSON.stringify(upstreamChunk({ finish: 'stop' }))}\r\n\r\n`,
      'data: [DONE]\r\n\r\n',
    ].join('')
    const bytes = new TextEncoder().encode(text)
    const chunksPromise = provider.streamChat(upstreamChatRequest({ stream: true }), upstreamCall(upstream.baseUrl)).then(collect)

    for (let at = 0; at < bytes.length; at += 3) stream.send(bytes.slice(at, at + 3))
    stream.close()

    const chunks = await chunksPromise
    expect(contents(chunks)).toBe('مرحبا بالعالم done')
    expect(chunks).toHaveLength(4)
  })

  test('fails with the connect timeout when the upstream sends no headers', async () => {
    const upstream = fakeUpstream(async (request) => {
      await request.aborted
      return new Response()
    })

    const error = await caught(provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { timeouts: { connectMs: 80 } })))

    expect(error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('connect timeout (80 ms)') })
    await upstream.requests[0]!.aborted
  })

  test('fails with the first-token timeout when no chunk follows the headers', async () => {
    const { upstream, stream } = controlledUpstream()
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { timeouts: { firstTokenMs: 120 } })))[Symbol.asyncIterator]()
    stream.send(': still thinking\n\n')

    const error = await caught(chunks.next())

    expect(error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('first-token timeout (120 ms)') })
    await stream.cancelled
  })

  test('fails with the idle timeout when the upstream stalls between chunks', async () => {
    const { upstream, stream } = controlledUpstream()
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { timeouts: { idleMs: 100 } })))[Symbol.asyncIterator]()
    stream.send(sseFrame(upstreamChunk({ role: true, content: '' })))
    await chunks.next()

    const error = await caught(chunks.next())

    expect(error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('idle timeout (100 ms)') })
    await stream.cancelled
  })

  test('does not count the time the consumer spends between chunks as upstream idleness', async () => {
    const upstream = fakeUpstream(() => new Response(upstreamStreamText(['a', 'b']), { headers: { 'content-type': 'text/event-stream' } }))
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { timeouts: { idleMs: 50 } })))[Symbol.asyncIterator]()
    await chunks.next()

    await Bun.sleep(120)
    const rest = await collect({ [Symbol.asyncIterator]: () => chunks })

    expect(rest).toHaveLength(4)
  })

  test('fails with the total timeout when a trickling stream runs too long', async () => {
    const stream = new ControlledStream()
    const upstream = fakeUpstream(() => stream.response())
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { timeouts: { totalMs: 200, idleMs: 1_000 } })))[Symbol.asyncIterator]()
    const trickle = setInterval(() => stream.send(sseFrame(upstreamChunk({ content: 'x' }))), 10)

    let error: unknown
    try {
      for (;;) await chunks.next()
    } catch (caughtError) {
      error = caughtError
    }
    clearInterval(trickle)

    expect(error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('total timeout (200 ms)') })
  })

  test('fails on an event that is not JSON, or not a chunk', async () => {
    for (const bad of ['{"id": "chatcmpl-1", "choices": [', '{"id":"x","object":"chat.completion.chunk"}', '42']) {
      const upstream = fakeUpstream(() => new Response(sseFrame(upstreamChunk({ role: true, content: '' })) + `data: ${bad}\n\n` + doneFrame))
      const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()

      const first = await chunks.next()
      const error = await caught(chunks.next())

      expect(first.done).toBe(false)
      expect(error).toMatchObject({ code: 'no_healthy_backends' })
      expect((await chunks.next()).done).toBe(true)
    }
  })

  test('fails on a chunk whose choices are not deltas, and gives a choice without a delta an empty one', async () => {
    const choices = [[null], [{ index: 0, delta: 'text' }], [{ index: 0, delta: { tool_calls: 'call' } }], [{ index: 0, delta: { tool_calls: [null] } }]]
    for (const bad of choices) {
      const upstream = fakeUpstream(() => new Response(sseFrame(upstreamChunk({ role: true, content: '' })) + sseFrame({ ...upstreamChunk(), choices: bad }) + doneFrame))
      const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()

      const first = await chunks.next()
      const error = await caught(chunks.next())

      expect(first.done).toBe(false)
      expect(error).toMatchObject({ code: 'no_healthy_backends', message: 'The upstream sent a chunk whose choices are not deltas.' })
    }
    const lenient = fakeUpstream(() => new Response(sseFrame(upstreamChunk({ role: true, content: 'Hi' })) + sseFrame({ ...upstreamChunk(), choices: [{ index: 0, finish_reason: 'stop' }] }) + doneFrame))
    const chunks = await collect(await provider.streamChat(upstreamChatRequest(), upstreamCall(lenient.baseUrl)))
    expect(chunks[1]!.choices[0]!.delta).toEqual({})
  })

  test('fails when the upstream closes before the answer finished', async () => {
    const { upstream, stream } = controlledUpstream()
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()
    stream.send(sseFrame(upstreamChunk({ role: true, content: '' })) + sseFrame(upstreamChunk({ content: 'Hal' })))

    await chunks.next()
    await chunks.next()
    stream.close()
    const error = await caught(chunks.next())

    expect(error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('closed before the answer finished') })
  })

  test('ends cleanly when the upstream closes after every choice finished, without [DONE]', async () => {
    const upstream = fakeUpstream(() => new Response(sseFrame(upstreamChunk({ content: 'Hi' })) + sseFrame(upstreamChunk({ finish: 'stop' }))))

    const chunks = await collect(await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))

    expect(chunks).toHaveLength(2)
  })

  test('hands out the chunks before an error event, then throws it', async () => {
    const upstream = fakeUpstream(
      () =>
        new Response(
          sseFrame(upstreamChunk({ role: true, content: '' })) +
            sseFrame(upstreamChunk({ content: 'partial' })) +
            sseFrame({ error: { message: 'engine crashed at /srv/model', type: 'InternalServerError', param: null, code: 500 } }) +
            doneFrame,
        ),
    )
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()

    await chunks.next()
    const partial = await chunks.next()
    const error = await caught(chunks.next())

    expect(partial.value!.choices[0]!.delta.content).toBe('partial')
    expect(error).toMatchObject({ code: 'no_healthy_backends', message: 'The upstream failed mid-stream.' })
  })

  test('quotes a mid-stream error that is about the request', async () => {
    const upstream = fakeUpstream(() => new Response(sseFrame({ error: { message: 'Prompt too long for upstream-model', type: 'BadRequestError', param: null, code: 400 } })))
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()

    const error = await caught(chunks.next())

    expect(error).toMatchObject({ code: 'invalid_request', message: `The model rejected the request: Prompt too long for ${catalogModelId}` })
  })

  /** A stream whose first chunk was read, whose client can go away while the next is awaited. */
  async function streamAwaitingItsSecondChunk() {
    const { upstream, stream } = controlledUpstream()
    const client = new AbortController()
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { signal: client.signal })))[Symbol.asyncIterator]()
    stream.send(sseFrame(upstreamChunk({ role: true, content: '' })))
    await chunks.next()
    return { upstream, stream, client, pending: chunks.next() }
  }

  test('aborts the upstream request when the client goes away mid-stream', async () => {
    const { upstream, stream, client, pending } = await streamAwaitingItsSecondChunk()
    const reason = new Error('client went away')

    client.abort(reason)

    expect(await caught(pending)).toBe(reason)
    await upstream.requests[0]!.aborted
    await stream.cancelled
  })

  test('hands out no chunk the upstream sends after the client went away: it would be billed', async () => {
    const { upstream, stream, client, pending } = await streamAwaitingItsSecondChunk()
    const reason = new Error('client went away')

    client.abort(reason)
    stream.send(sseFrame(upstreamChunk({ content: 'too late' })))

    expect(await caught(pending)).toBe(reason)
    await upstream.requests[0]!.aborted
  })

  test('aborts the upstream request when the client goes away before the headers', async () => {
    const upstream = fakeUpstream(async (request) => {
      await request.aborted
      return new Response()
    })
    const client = new AbortController()
    const opening = caught(provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { signal: client.signal })))
    const request = await upstream.nextRequest()

    client.abort(new Error('gone'))

    expect(await opening).toMatchObject({ message: 'gone' })
    await request.aborted
  })

  test('closes the upstream connection when the consumer stops early', async () => {
    const { upstream, stream } = controlledUpstream()
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()
    stream.send(sseFrame(upstreamChunk({ role: true, content: '' })))
    await chunks.next()

    await chunks.return!()

    await stream.cancelled
    expect((await chunks.next()).done).toBe(true)
  })

  test('ends at [DONE] even if the upstream keeps the body open, then closes it after the idle timeout', async () => {
    const { upstream, stream } = controlledUpstream()
    stream.send(upstreamStreamText(['a', 'b']))

    const chunks = await collect(await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl, { timeouts: { idleMs: 100 } })))

    expect(contents(chunks)).toBe('ab')
    await stream.cancelled
  })

  test('reuses the upstream connection after a stream that ended with [DONE]', async () => {
    const upstream = fakeUpstream(() => new Response(upstreamStreamText(['a']), { headers: { 'content-type': 'text/event-stream' } }))

    await collect(await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))
    await collect(await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))

    expect(upstream.requests[1]!.clientPort).toBe(upstream.requests[0]!.clientPort!)
  })
})

describe('answers too large to hold', () => {
  test('an answer that declares more than the limit is refused before it is read', async () => {
    // A raw server: the gateway must give up on the headers, so the body is never sent.
    const server = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        data(socket) {
          socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${maxAnswerBytes + 1}\r\n\r\n{"id":`)
        },
      },
    })
    try {
      const error = await caught(provider.chat(upstreamChatRequest(), upstreamCall(`http://127.0.0.1:${server.port}/v1`)))

      expect(error).toMatchObject({ code: 'no_healthy_backends', message: `The upstream sent an answer of ${maxAnswerBytes + 1} bytes, above the limit of ${maxAnswerBytes}.` })
    } finally {
      server.stop(true)
    }
  })

  test('an answer without a declared length is counted as it arrives, and refused past the limit', async () => {
    const body = (pieces: string[]) => new Response(new ReadableStream({ start: (controller) => (pieces.forEach((piece) => controller.enqueue(new TextEncoder().encode(piece))), controller.close()) }))
    const pieces = ['{"text":"مر', 'حبا"}', '          ']

    expect(await readCapped(body(pieces), 40)).toBe(pieces.join(''))
    expect(await caught(readCapped(body(pieces), 20))).toMatchObject({ code: 'no_healthy_backends', message: 'The upstream sent an answer longer than 20 bytes.' })
  })

  test('a stream event longer than the limit fails the stream', async () => {
    const upstream = fakeUpstream(() => new Response(sseFrame(upstreamChunk({ role: true, content: '' })) + `data: ${'x'.repeat(maxEventChars + 1)}`))
    const chunks = (await provider.streamChat(upstreamChatRequest(), upstreamCall(upstream.baseUrl)))[Symbol.asyncIterator]()

    const first = await chunks.next()
    const error = await caught(chunks.next())

    expect(first.done).toBe(false)
    expect(error).toMatchObject({ code: 'no_healthy_backends', message: `The upstream sent an event longer than ${maxEventChars} characters.` })
  })
})

describe('OpenAICompatibleProvider.embed', () => {
  const vectors = [
    [0.5, -0.25, 0.125, 1],
    [0, 1, -1, 0.75],
  ]
  const base64 = (vector: number[]) => Buffer.from(new Float32Array(vector).buffer).toString('base64')
  const embeddingsAnswer = (embeddings: unknown[], usage: unknown = { prompt_tokens: 6, total_tokens: 6 }) => ({
    object: 'list',
    data: embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding })),
    model: 'upstream-model',
    ...(usage ? { usage } : {}),
  })

  test('asks for base64, passes dimensions, and decodes little-endian float32', async () => {
    const upstream = fakeUpstream(() => jsonResponse(embeddingsAnswer(vectors.map(base64))))

    const result = await provider.embed(textInput(['first', 'second']), 4, upstreamCall(upstream.baseUrl, { modality: 'embeddings' }))

    expect(result.vectors.map((vector) => Array.from(vector))).toEqual(vectors)
    expect(result.promptTokens).toBe(6)
    expect(upstream.requests[0]!.path).toBe('/v1/embeddings')
    expect(upstream.requests[0]!.body).toEqual({ model: 'upstream-model', input: ['first', 'second'], encoding_format: 'base64', dimensions: 4 })
  })

  test("passes the request's other fields, never over its own", async () => {
    const upstream = fakeUpstream(() => jsonResponse(embeddingsAnswer(vectors.map(base64))))
    const extra = { user: 'u-1', truncate_prompt_tokens: 512, model: 'other', input: ['other'], encoding_format: 'float' }

    await provider.embed(textInput(['first', 'second']), null, upstreamCall(upstream.baseUrl, { modality: 'embeddings' }), extra)

    expect(upstream.requests[0]!.body).toEqual({ user: 'u-1', truncate_prompt_tokens: 512, model: 'upstream-model', input: ['first', 'second'], encoding_format: 'base64' })
  })

  test('accepts float arrays, puts items in index order, and counts the ids of decoded token input when no usage is reported', async () => {
    const answer = embeddingsAnswer(vectors, null)
    answer.data.reverse()
    const upstream = fakeUpstream(() => jsonResponse(answer))

    const result = await provider.embed({ items: ['a bc', 'de'], tokens: 5 }, null, upstreamCall(upstream.baseUrl, { modality: 'embeddings' }))

    expect(result.vectors.map((vector) => Array.from(vector))).toEqual(vectors)
    expect(result.promptTokens).toBe(5)
    expect(upstream.requests[0]!.body).toEqual({ model: 'upstream-model', input: ['a bc', 'de'], encoding_format: 'base64' })
  })

  test('asks again for floats when the upstream rejects base64', async () => {
    const upstream = fakeUpstream((request) =>
      request.body.encoding_format === 'base64'
        ? jsonResponse({ error: { message: 'base64 encoding is not currently supported', type: 'BadRequestError', code: 400 } }, 400)
        : jsonResponse(embeddingsAnswer(vectors)),
    )

    const result = await provider.embed(textInput(['first', 'second']), null, upstreamCall(upstream.baseUrl, { modality: 'embeddings' }))

    expect(result.vectors).toHaveLength(2)
    expect(upstream.requests.map((request) => request.body.encoding_format)).toEqual(['base64', 'float'])
  })

  test('counts the input\'s tokens when the upstream reports none, and rejects a wrong vector count', async () => {
    const upstream = fakeUpstream((request) => jsonResponse(embeddingsAnswer(request.body.input.length === 1 ? [base64(vectors[0]!)] : [base64(vectors[0]!)], null)))

    const one = await provider.embed(textInput(['twelve chars']), null, upstreamCall(upstream.baseUrl, { modality: 'embeddings' }))
    const error = await caught(provider.embed(textInput(['a', 'b']), null, upstreamCall(upstream.baseUrl, { modality: 'embeddings' })))

    expect(one.promptTokens).toBe(estimateTextTokens('twelve chars'))
    expect(error).toMatchObject({ code: 'no_healthy_backends' })
  })

  test('counts the input\'s tokens when the upstream reports a count it cannot bill', async () => {
    const upstream = fakeUpstream(() => jsonResponse({ ...embeddingsAnswer([base64(vectors[0]!)], null), usage: { prompt_tokens: -4, total_tokens: -4 } }))

    const result = await provider.embed(textInput(['twelve chars']), null, upstreamCall(upstream.baseUrl, { modality: 'embeddings' }))

    expect(result.promptTokens).toBe(estimateTextTokens('twelve chars'))
  })
})
