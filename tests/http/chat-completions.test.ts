import { describe, expect, spyOn, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import type { ChatCompletion, ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { OpenAICompatibleProvider } from '../../server/adapters/providers/openai-compatible'
import { parseCatalogFile } from '../../server/catalog-file'
import { estimatePromptTokens, estimateTextTokens } from '../../server/core/estimate-tokens'
import type { ProviderCall } from '../../server/core/ports'
import { catalogFileModel } from '../support/catalog-file-model'
import { doneFrame, sseFrame, startFakeUpstream, upstreamChunk, upstreamUsageChunk } from '../support/fake-upstream'
import { readUntil } from '../support/read-until'
import { chatRequest, embeddingsModel, keyIdentity, retiredModel, ScriptedProvider, testApp } from '../support/test-app'
import { waitFor } from '../support/wait-for'

async function readSse(response: Response): Promise<string[]> {
  const text = await response.text()
  return text.split('\n\n').filter(Boolean).map((event) => event.replace(/^data: /, ''))
}

describe('POST /v1/chat/completions', () => {
  test('answers a chat completion with the catalog model id and records usage', async () => {
    const { api, usage } = await testApp()

    const { data, status, headers } = await api.v1.chat.completions.post(chatRequest())

    expect(status).toBe(200)
    expect((headers as Headers).get('x-request-id')).toMatch(/^req_/)
    expect(data).toMatchObject({ object: 'chat.completion', model: 'nile/qwen2.5-7b-instruct', choices: [{ message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } })
    expect(usage).toHaveLength(1)
    expect(usage[0]).toMatchObject({ keyId: 'key_test', model: 'nile/qwen2.5-7b-instruct', status: 200, promptTokens: 7, completionTokens: 2, costMicros: 65n, stream: false })
  })

  test('streams chunks as server-sent events ending in [DONE], with the usage chunk only when asked', async () => {
    const { send } = await testApp()

    const plain = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ stream: true })))
    const withUsage = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ stream: true, stream_options: { include_usage: true } })))

    expect(plain.headers.get('content-type')).toStartWith('text/event-stream')
    expect(plain.headers.get('x-request-id')).toMatch(/^req_/)
    const plainEvents = await readSse(plain)
    expect(plainEvents.at(-1)).toBe('[DONE]')
    expect(plainEvents.slice(0, -1).map((event) => JSON.parse(event).choices[0].delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'Hel' }, { content: 'lo' }, {}])
    expect(plainEvents.slice(0, -1).every((event) => !('usage' in JSON.parse(event)))).toBe(true)
    const usageEvents = await readSse(withUsage)
    expect(JSON.parse(usageEvents.at(-2)!)).toMatchObject({ object: 'chat.completion.chunk', model: 'nile/qwen2.5-7b-instruct', choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } })
  })

  test('estimates usage when the provider reports none', async () => {
    const provider = new ScriptedProvider()
    provider.usage = null
    provider.chunks = ['abcd', 'efgh']
    const { send, usage } = await testApp({ provider })

    const events = await readSse(await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ stream: true, stream_options: { include_usage: true } }))))

    expect(JSON.parse(events.at(-2)!).usage.completion_tokens).toBe(2)
    expect(usage[0]).toMatchObject({ completionTokens: 2, status: 200 })
  })

  test('a failure after the stream began is one error event followed by [DONE]', async () => {
    const provider = new ScriptedProvider()
    provider.failAfterChunks = { count: 1, error: new GatewayError('no_healthy_backends', 'upstream went away') }
    const { send, usage } = await testApp({ provider })

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ stream: true })))
    const events = await readSse(response)

    expect(response.status).toBe(200)
    expect(events.slice(-2)).toEqual([JSON.stringify({ error: { type: 'service_unavailable', message: 'upstream went away', code: 'no_healthy_backends', param: null } }), '[DONE]'])
    expect(usage[0]).toMatchObject({ status: 503, completionTokens: 1 })
  })

  test('a failure before the first chunk is a real status', async () => {
    const provider = new ScriptedProvider()
    provider.failBeforeStart = new GatewayError('engine_unavailable')
    const { send, usage } = await testApp({ provider })

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ stream: true })))

    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect((await response.json()).error.code).toBe('engine_unavailable')
    expect(usage[0]).toMatchObject({ status: 503, promptTokens: 0, completionTokens: 0 })
  })

  test('a client that cancels mid-stream aborts the provider and is recorded as 499 with the tokens produced', async () => {
    const provider = new ScriptedProvider()
    provider.usage = null
    provider.chunks = ['one ', 'two ', 'three ', 'four ']
    // The stream writes what the provider produces without waiting for the reader: the second
    // token is held back until the client has gone, so that one token was produced by then.
    provider.beforeChunk = (index, signal) => (index === 0 || signal.aborted ? undefined : new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })))
    const { send, usage } = await testApp({ provider })

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ stream: true })))
    const reader = response.body!.getReader()
    await readUntil(reader, '"one "')
    await reader.cancel()

    expect(provider.calls[0]!.call.signal.aborted).toBe(true)
    expect(usage).toHaveLength(1)
    expect(usage[0]).toMatchObject({ status: 499, completionTokens: 1 })
  })

  test.each([
    [{ model: 'nope' }, 400, 'model_not_found', 'model'],
    [{ model: embeddingsModel }, 400, 'model_not_supported_on_endpoint', 'model'],
    [{ model: retiredModel }, 403, 'model_sunset', 'model'],
    [{ max_tokens: 10_000_000 }, 400, 'max_tokens_exceeded', 'max_tokens'],
    [{ max_completion_tokens: 10_000_000 }, 400, 'max_tokens_exceeded', 'max_completion_tokens'],
    [{ messages: [{ role: 'robot', content: 'x' }] }, 400, 'invalid_role', 'messages[0].role'],
    [{ messages: [{ role: 'user', content: 'a' }, { role: 'user' }] }, 400, 'missing_content', 'messages[1].content'],
    [{ messages: [{ role: 'assistant', content: null }] }, 400, 'missing_content', 'messages[0].content'],
    [{ messages: [] }, 400, 'invalid_request', 'messages'],
    [{ temperature: 2.5 }, 400, 'invalid_request', 'temperature'],
    [{ temperature: 'hot' }, 400, 'invalid_request', 'temperature'],
    [{ top_p: -0.1 }, 400, 'invalid_request', 'top_p'],
    [{ n: 0 }, 400, 'invalid_request', 'n'],
    [{ n: '2' }, 400, 'invalid_request', 'n'],
    [{ max_tokens: '16' }, 400, 'invalid_request', 'max_tokens'],
    [{ frequency_penalty: 3 }, 400, 'invalid_request', 'frequency_penalty'],
    [{ presence_penalty: -3 }, 400, 'invalid_request', 'presence_penalty'],
    [{ stop: ['a', 'b', 'c', 'd', 'e'] }, 400, 'invalid_request', 'stop'],
    [{ stream: 'yes' }, 400, 'invalid_request', 'stream'],
    [{ max_tokens: 1.5 }, 400, 'invalid_request', 'max_tokens'],
    [{ top_logprobs: 21 }, 400, 'invalid_request', 'top_logprobs'],
    [{ model: 'm'.repeat(257) }, 400, 'invalid_request', 'model'],
  ])('%j answers %i %s', async (overrides, status, code, param) => {
    const { send, provider } = await testApp()

    const response = await send('POST', '/v1/chat/completions', JSON.stringify({ ...chatRequest(), ...overrides }))

    expect(response.status).toBe(status)
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
    expect((await response.json()).error).toMatchObject({ code, param })
    expect(provider.calls).toHaveLength(0)
  })

  // A message or content part that fits no shape is reported where it goes wrong, not as the union
  // it is one of ("Invalid messages[0]: Expected union value.").
  test.each([
    [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id', 'this field is required'],
    [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }, 'messages[0].content[0].image_url.url', 'this field is required'],
    [{ messages: [{ role: 'user', content: [{ type: 'video', video: {} }] }] }, 'messages[0].content[0].type', 'must be one of "text", "image_url", "input_audio", "file"'],
    [{ messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] }, 'messages[0].content[0].type', "Expected 'text'"],
    [{ messages: [{ role: 'user', content: 5 }] }, 'messages[0].content', 'expected string or array'],
    [{ messages: ['hi'] }, 'messages[0]', 'expected object'],
    [{ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function' }] }] }, 'messages[0].tool_calls[0].function', 'this field is required'],
    [{ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRiQ=', format: 'ogg' } }] }] }, 'messages[0].content[0].input_audio.format', "expected 'wav' or 'mp3'"],
    [{ tool_choice: { type: 'function' } }, 'tool_choice.function', 'this field is required'],
    // A union with a message of its own keeps it.
    [{ stop: 5 }, 'stop', 'stop must be a string or an array of 1 to 4 strings'],
  ])('%j is refused at %s', async (overrides, param, problem) => {
    const { send, provider } = await testApp()

    const response = await send('POST', '/v1/chat/completions', JSON.stringify({ ...chatRequest(), ...overrides }))

    expect(response.status).toBe(400)
    expect((await response.json()).error).toEqual({ type: 'invalid_request_error', code: 'invalid_request', param, message: `Invalid ${param}: ${problem}.` })
    expect(provider.calls).toHaveLength(0)
  })

  test('accepts every role, content parts, tool calls and the OpenAI fields clients send', async () => {
    const { api, provider } = await testApp()

    const { status } = await api.v1.chat.completions.post({
      model: 'nile/qwen2.5-7b-instruct',
      messages: [
        { role: 'developer', content: 'Be terse.' },
        { role: 'system', content: [{ type: 'text', text: 'Answer in English.' }] },
        { role: 'user', name: 'alice', content: [{ type: 'text', text: 'Weather?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } }, { type: 'input_audio', input_audio: { data: 'UklGRiQ=', format: 'wav' } }, { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Cairo"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":31}' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      n: 1,
      seed: 42,
      logit_bias: { '50256': -100 },
      logprobs: true,
      top_logprobs: 2,
      response_format: { type: 'json_object' },
      user: 'user-1',
      metadata: { team: 'a' },
      stop: ['\nUser:'],
      temperature: null,
      max_completion_tokens: 64,
      stream_options: null,
    })

    expect(status).toBe(200)
    expect(provider.calls).toHaveLength(1)
  })

  test('passes unknown fields through to the provider', async () => {
    const { send, provider } = await testApp()

    await send('POST', '/v1/chat/completions', JSON.stringify({ ...chatRequest(), top_k: 40, reasoning_effort: 'low' }))

    expect(provider.calls[0]!.body).toMatchObject({ top_k: 40, reasoning_effort: 'low' })
  })

  test('refuses more than 2,000,000 characters of text in one message with 422', async () => {
    const { send } = await testApp()

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x'.repeat(1_000_000) }, { type: 'text', text: 'y'.repeat(1_000_001) }] }] })))

    expect(response.status).toBe(422)
    expect((await response.json()).error).toMatchObject({ code: 'content_limit_exceeded', param: 'messages[0].content' })
  })

  test('refuses more than 20 media parts with 422', async () => {
    const { send } = await testApp()
    const image = { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ messages: [{ role: 'user', content: Array(21).fill(image) }] })))

    expect(response.status).toBe(422)
    expect((await response.json()).error.code).toBe('content_limit_exceeded')
  })

  test('refuses an image that is not base64 or not at a web address with 400 naming the field', async () => {
    const { send, provider } = await testApp()
    const image = (url: string) => chatRequest({ messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url } }] }] })

    const garbled = await send('POST', '/v1/chat/completions', JSON.stringify(image('data:image/png;base64,iVBORw0K Ggo=')))
    const local = await send('POST', '/v1/chat/completions', JSON.stringify(image('file:///etc/passwd')))

    expect(garbled.status).toBe(400)
    expect((await garbled.json()).error).toEqual({
      type: 'invalid_request_error',
      code: 'invalid_request',
      param: 'messages[0].content[1].image_url.url',
      message: 'Invalid messages[0].content[1].image_url.url: the data is not base64 (A-Z, a-z, 0-9, + and /, padded with =, no spaces).',
    })
    expect(local.status).toBe(400)
    expect((await local.json()).error.message).toContain('use an http(s) URL or a base64 data URL')
    expect(provider.calls).toHaveLength(0)
  })

  test('refuses more than 5 MB of decoded media in one message with 422', async () => {
    const { send } = await testApp()
    const data = 'A'.repeat(6_700_000)

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }] }] })))

    expect(response.status).toBe(422)
    expect((await response.json()).error).toMatchObject({ code: 'content_limit_exceeded', param: 'messages[0].content' })
  })
})

describe('authentication of inference routes', () => {
  test.each([
    [{}, 'missing_auth_header'],
    [{ authorization: 'Basic abc' }, 'missing_auth_header'],
    [{ authorization: 'Bearer abc' }, 'invalid_api_key_format'],
    [{ authorization: 'Bearer sk-unknown' }, 'invalid_api_key'],
  ])('%j answers 401 %s, before the body is validated', async (headers, code) => {
    const { app } = await testApp()

    const response = await app.handle(new Request('http://localhost/v1/chat/completions', { method: 'POST', headers, body: '{"model":' }))

    expect(response.status).toBe(401)
    expect((await response.json()).error).toEqual(expect.objectContaining({ code, type: 'authentication_error' }))
  })

  test.each([
    [{ revokedAt: Date.now() - 1000 }, 401, 'key_revoked'],
    [{ expiresAt: Date.now() - 1000 }, 401, 'key_expired'],
    [{ orgStatus: 'suspended' as const }, 403, 'org_suspended'],
    [{ scopes: ['embeddings'] }, 403, 'key_scope_insufficient'],
  ])('a key with %j answers %i %s', async (overrides, status, code) => {
    const { send } = await testApp({ identity: keyIdentity(overrides) })

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()))

    expect(response.status).toBe(status)
    expect((await response.json()).error.code).toBe(code)
  })
})

describe('a client that goes away during a plain completion', () => {
  /** A provider that answers only by failing once the client has gone, with the reason the gateway's signal gives. */
  class WaitingProvider extends ScriptedProvider {
    override async chat(body: ChatCompletionRequest, call: ProviderCall): Promise<ChatCompletion> {
      this.calls.push({ body, call })
      return new Promise((_, reject) => call.signal.addEventListener('abort', () => reject(call.signal.reason), { once: true }))
    }
  }

  test('stops the provider, is recorded as 499, and is not logged as a server fault', async () => {
    const provider = new WaitingProvider()
    const { app, secret, usage } = await testApp({ provider })
    const errors = spyOn(console, 'error').mockImplementation(() => {})
    try {
      const client = new AbortController()
      const answered = app.handle(
        new Request('http://localhost/v1/chat/completions', {
          method: 'POST',
          body: JSON.stringify(chatRequest()),
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
          signal: client.signal,
        }),
      )
      await waitFor(() => provider.calls.length === 1, { what: 'the provider call' })
      client.abort(new DOMException('The connection was closed.', 'AbortError'))
      const response = await answered

      expect(provider.calls[0]!.call.signal.aborted).toBe(true)
      expect(response.status).toBe(499)
      expect(usage).toHaveLength(1)
      expect(usage[0]).toMatchObject({ status: 499, completionTokens: 0 })
      expect(errors.mock.calls.filter(([first]) => first === 'unhandled error')).toEqual([])
    } finally {
      errors.mockRestore()
    }
  })
})

describe('an upstream that reports usage the gateway cannot bill', () => {
  test('a stream ending in fractional counts is relayed to [DONE] and billed at the estimate', async () => {
    const frames = [sseFrame(upstreamChunk({ role: true, content: 'Hello there' })), sseFrame(upstreamChunk({ finish: 'stop' })), sseFrame({ ...upstreamUsageChunk(9, 2), usage: { prompt_tokens: 9.5, completion_tokens: 2 } }), doneFrame]
    const upstream = startFakeUpstream(() => new Response(frames.join(''), { headers: { 'content-type': 'text/event-stream' } }))
    try {
      const models = parseCatalogFile({ models: [catalogFileModel({ id: 'test/upstream', deployments: [{ provider: 'openai-compatible', base_url: upstream.baseUrl, upstream_model: 'u' }] })] })
      const { send, usage } = await testApp({ models, providerFor: () => new OpenAICompatibleProvider() })
      const body = chatRequest({ model: 'test/upstream', stream: true, stream_options: { include_usage: true } })

      const response = await send('POST', '/v1/chat/completions', JSON.stringify(body))
      const events = (await response.text()).split('\n\n').filter(Boolean)

      const estimated = { prompt_tokens: estimatePromptTokens(body.messages), completion_tokens: estimateTextTokens('Hello there') }
      expect(response.status).toBe(200)
      expect(events.at(-1)).toBe('data: [DONE]')
      expect(JSON.parse(events.at(-2)!.slice('data: '.length)).usage).toEqual({ ...estimated, total_tokens: estimated.prompt_tokens + estimated.completion_tokens })
      await waitFor(() => usage.length === 1, { what: 'the usage row' })
      expect(usage[0]).toMatchObject({ status: 200, promptTokens: estimated.prompt_tokens, completionTokens: estimated.completion_tokens })
    } finally {
      upstream.stop()
    }
  })
})
