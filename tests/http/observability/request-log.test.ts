import { describe, expect, test } from 'bun:test'
import { hostname } from 'node:os'
import { createLogger, loggableError, logAt } from '../../../server/observability/logger'
import { createProviderRegistry } from '../../../server/adapters/providers'
import { jsonResponse, startFakeUpstream, upstreamCall, upstreamChatRequest, upstreamCompletion } from '../../support/fake-upstream'
import { chatModel, chatRequest } from '../../support/test-app'
import { CapturedOutput, observedApp } from './observed-app'

const secretPrompt = 'my secret prompt 7f3a'

describe('the request log', () => {
  test('writes one pino line per chat completion with its ids, model, deployment, status, tokens, cost and latency', async () => {
    const { send, output, usage, identity } = await observedApp()

    const response = await send('POST', '/v1/chat/completions', { body: chatRequest() })
    await response.json()

    const [event] = usage
    expect(output.requests).toEqual([
      {
        level: 30,
        time: expect.any(Number),
        pid: process.pid,
        hostname: hostname(),
        request_id: response.headers.get('x-request-id'),
        method: 'POST',
        route: '/v1/chat/completions',
        status: 200,
        latency_ms: expect.any(Number),
        org_id: identity.orgId,
        project_id: identity.projectId,
        key_id: identity.keyId,
        model: chatModel,
        deployment: `${chatModel}#0`,
        stream: false,
        prompt_tokens: 7,
        completion_tokens: 2,
        cost_micros: Number(event!.costMicros),
        msg: 'request',
      },
    ])
  })

  test('gives a stream its line when it ends, with its time to first token', async () => {
    const { send, output } = await observedApp()

    const response = await send('POST', '/v1/chat/completions', { body: chatRequest({ stream: true }) })
    const linesBeforeTheEnd = output.requests.length
    await response.text()

    expect(linesBeforeTheEnd).toBe(0)
    expect(output.requests).toEqual([expect.objectContaining({ status: 200, stream: true, prompt_tokens: 7, completion_tokens: 2, ttft_ms: expect.any(Number) })])
    expect(output.requests[0]!.ttft_ms as number).toBeLessThanOrEqual(output.requests[0]!.latency_ms as number)
  })

  test('names the error code of a refused request, with the ids of its key', async () => {
    const { send, output, identity } = await observedApp({ balanceMicros: 1n })

    const response = await send('POST', '/v1/chat/completions', { body: chatRequest() })

    expect(response.status).toBe(402)
    expect(output.requests).toEqual([expect.objectContaining({ status: 402, error_code: 'insufficient_balance', key_id: identity.keyId, model: chatModel })])
    expect(output.requests[0]).not.toHaveProperty('cost_micros')
  })

  test('writes a line for a request no route takes and for one without a key, at info, and the probes at debug only', async () => {
    const info = await observedApp()
    const debug = await observedApp({ logLevel: 'debug' })

    for (const { send } of [info, debug]) {
      await send('GET', '/nowhere', { headers: { authorization: '' } })
      await send('POST', '/v1/chat/completions', { body: chatRequest(), headers: { authorization: '' } })
      await send('GET', '/healthz', { headers: { authorization: '' } })
    }

    const summary = (output: CapturedOutput) => output.requests.map(({ level, route, status, error_code }) => ({ level, route, status, error_code }))
    expect(summary(info.output)).toEqual([
      { level: 30, route: 'unmatched', status: 404, error_code: 'not_found' },
      { level: 30, route: '/v1/chat/completions', status: 401, error_code: 'missing_auth_header' },
    ])
    expect(summary(debug.output)).toEqual([...summary(info.output), { level: 20, route: '/healthz', status: 200, error_code: undefined }])
  })

  test('holds no API key, prompt or completion, streamed or not', async () => {
    const { send, output, secret, provider } = await observedApp()
    provider.chunks = ['the secret ', 'completion 9c2e']

    await (await send('POST', '/v1/chat/completions', { body: chatRequest({ messages: [{ role: 'user', content: secretPrompt }] }) })).json()
    await (await send('POST', '/v1/chat/completions', { body: chatRequest({ stream: true, messages: [{ role: 'user', content: secretPrompt }] }) })).text()

    expect(output.requests).toHaveLength(2)
    for (const forbidden of [secret, secret.slice(3), secretPrompt, 'completion 9c2e', 'Bearer']) expect(output.text).not.toContain(forbidden)
  })

  test('writes nothing at LOG_LEVEL=silent', async () => {
    const { send, output } = await observedApp({ logLevel: 'silent' })

    await (await send('POST', '/v1/chat/completions', { body: chatRequest() })).json()
    await send('GET', '/nowhere', { headers: { authorization: '' } })

    expect(output.text).toBe('')
  })

  test('writes 5xx answers at error, so that LOG_LEVEL=error keeps them and drops the rest', async () => {
    const { send, output, provider } = await observedApp({ logLevel: 'error' })
    provider.failBeforeStart = new Error('the provider broke')

    await (await send('POST', '/v1/chat/completions', { body: chatRequest() })).json()
    provider.failBeforeStart = null
    await (await send('POST', '/v1/chat/completions', { body: chatRequest() })).json()

    expect(output.requests.map(({ level, status, error_code }) => ({ level, status, error_code }))).toEqual([{ level: 50, status: 500, error_code: 'internal_error' }])
  })
})

describe('logged errors', () => {
  test('keep a failed statement\'s cause, never its SQL or parameters', () => {
    const keyHash = 'a'.repeat(64)
    const failed = Object.assign(new Error(`Failed query: select * from api_keys where hash = $1\nparams: ${keyHash}`), {
      query: 'select * from api_keys where hash = $1',
      params: [keyHash],
      cause: Object.assign(new Error('connection terminated'), { code: '57P01' }),
    })
    const output = new CapturedOutput()

    logAt(createLogger('info', output), 'error')('reading a key failed', failed)

    expect(loggableError(failed)).toEqual({ type: 'Error', message: 'a database statement failed: connection terminated', code: '57P01' })
    expect(output.lines).toEqual([expect.objectContaining({ level: 50, msg: 'reading a key failed', err: { type: 'Error', message: 'a database statement failed: connection terminated', code: '57P01' } })])
    expect(output.text).not.toContain(keyHash)
    expect(output.text).not.toContain('select')
  })

  test('keep the type, message, code and stack frames of other errors', () => {
    const error = Object.assign(new TypeError('bad value'), { code: 'E_BAD', secret: 'hidden field' })

    const logged = loggableError(error)

    expect(logged).toEqual({ type: 'TypeError', message: 'bad value', code: 'E_BAD', stack: expect.stringMatching(/^ {4}at /) })
    expect(JSON.stringify(logged)).not.toContain('hidden field')
  })
})

describe('a W3C traceparent', () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'

  test('is continued upstream with a span id of the gateway, and its trace id is logged', async () => {
    const upstream = startFakeUpstream(() => jsonResponse(upstreamCompletion('traced')))
    try {
      const { model } = upstreamCall(upstream.baseUrl)
      const { send, output } = await observedApp({ models: [model], providerFor: createProviderRegistry() })

      const traced = await send('POST', '/v1/chat/completions', { body: upstreamChatRequest(), headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } })
      const untraced = await send('POST', '/v1/chat/completions', { body: upstreamChatRequest(), headers: { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` } })

      expect([traced.status, untraced.status]).toEqual([200, 200])
      const [first, second] = upstream.requests
      expect(first!.headers.get('traceparent')).toMatch(new RegExp(`^00-${traceId}-(?!00f067aa0ba902b7)[0-9a-f]{16}-01$`))
      expect(second!.headers.get('traceparent')).toBeNull()
      expect(output.requests.map((line) => line.trace_id)).toEqual([traceId, undefined])
    } finally {
      upstream.stop()
    }
  })
})
