import { afterAll, describe, expect, test } from 'bun:test'
import { Nilegate, NilegateConnectionError, NilegateError, NilegateTimeoutError } from '../../sdk/src'
import { backoffMs, retryDelayMs } from '../../sdk/src/transport'
import { parseRetryAfter } from '../../sdk/src/errors'
import { rejectionOf } from '../e2e/sdk-client'

/** One scripted answer of the fake gateway. */
type Scripted = { status: number; code?: string; headers?: Record<string, string> } | 'hang'

/**
 * A fake gateway answering GET /v1/models from a script, one answer per request, and recording the
 * requests; an error answer carries the OpenAI envelope with `code`. 'hang' never answers.
 */
function fakeGateway() {
  let script: Scripted[] = []
  const requests: Array<{ headers: Headers }> = []
  let arrived = Promise.withResolvers<void>()
  const hanging = Promise.withResolvers<void>()
  const server = Bun.serve({
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      // Copied now: Bun reuses a request's headers once its answer has gone.
      requests.push({ headers: new Headers(request.headers) })
      arrived.resolve()
      const answer = script.shift() ?? { status: 200 }
      if (answer === 'hang') {
        await hanging.promise
        return new Response(null, { status: 204 })
      }
      const headers = { 'content-type': 'application/json', 'x-request-id': `req_${requests.length}`, ...answer.headers }
      const body = answer.status < 400 ? { object: 'list', data: [] } : { error: { type: 'some_type', message: `failed with ${answer.status}`, code: answer.code ?? null, param: null } }
      return Response.json(body, { status: answer.status, headers })
    },
  })
  return {
    baseURL: `http://127.0.0.1:${server.port}/v1`,
    requests,
    /** Resolves once the first request after `answer()` has arrived. */
    firstRequest: () => arrived.promise,
    answer(...answers: Scripted[]) {
      script = answers
      requests.length = 0
      arrived = Promise.withResolvers<void>()
    },
    stop() {
      hanging.resolve()
      server.stop(true)
    },
  }
}

describe('retries', () => {
  const gateway = fakeGateway()
  const client = (options: { maxRetries?: number; timeout?: number } = {}) => new Nilegate({ baseURL: gateway.baseURL, apiKey: 'sk-test', ...options })
  afterAll(() => gateway.stop())

  test('waits as long as a 429 says in Retry-After, then succeeds', async () => {
    gateway.answer({ status: 429, code: 'rate_limit_exceeded', headers: { 'retry-after': '0' } }, { status: 200 })

    const models = await client().models.list()

    expect(models).toEqual({ object: 'list', data: [] })
    expect(gateway.requests).toHaveLength(2)
  })

  test('retries 500 and 503 up to maxRetries, then throws the last answer as a NilegateError', async () => {
    const retryNow = { 'retry-after': '0' }
    gateway.answer({ status: 500, code: 'internal_error', headers: retryNow }, { status: 503, code: 'no_healthy_backends', headers: retryNow }, { status: 503, code: 'engine_unavailable', headers: retryNow })

    const error = await rejectionOf(client({ maxRetries: 2 }).models.list())

    expect(error).toBeInstanceOf(NilegateError)
    expect(error).toMatchObject({ status: 503, code: 'engine_unavailable', type: 'some_type', message: 'failed with 503', requestId: 'req_3', retryAfter: 0 })
    expect(gateway.requests).toHaveLength(3)
  })

  test.each([
    [402, 'insufficient_balance'],
    [400, 'model_not_found'],
    [401, 'invalid_api_key'],
    [403, 'permission_denied'],
    [404, 'not_found'],
  ])('never retries a %i', async (status, code) => {
    gateway.answer({ status, code, headers: { 'retry-after': '0' } })

    const error = await rejectionOf(client().models.list())

    expect(error).toMatchObject({ status, code })
    expect(gateway.requests).toHaveLength(1)
  })

  test('gives up at once when Retry-After asks for more than a minute', async () => {
    gateway.answer({ status: 503, code: 'service_unavailable', headers: { 'retry-after': '120' } })

    const error = await rejectionOf(client().models.list())

    expect(error).toMatchObject({ status: 503, code: 'service_unavailable', retryAfter: 120 })
    expect(gateway.requests).toHaveLength(1)
  })

  test('sends a POST with one Idempotency-Key across its attempts', async () => {
    gateway.answer({ status: 503, code: 'service_unavailable', headers: { 'retry-after': '0' } }, { status: 200 })

    await client().chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] })

    const keys = gateway.requests.map((request) => request.headers.get('idempotency-key'))
    expect(keys).toEqual([expect.stringMatching(/^ng-retry-[0-9a-f]{32}$/), keys[0]])
  })

  test('a connection that cannot be made is retried, then thrown as a NilegateConnectionError', async () => {
    const closed = Bun.serve({ port: 0, fetch: () => new Response() })
    closed.stop(true)
    let attempts = 0
    const refusing = new Nilegate({
      baseURL: `http://127.0.0.1:${closed.port}/v1`,
      maxRetries: 1,
      fetch: (input, init) => {
        attempts++
        return fetch(input, init)
      },
    })

    const error = await rejectionOf(refusing.models.list())

    expect(error).toBeInstanceOf(NilegateConnectionError)
    expect(attempts).toBe(2)
  })

  test('an answer slower than timeout is a NilegateTimeoutError', async () => {
    gateway.answer('hang')

    const error = await rejectionOf(client({ timeout: 50, maxRetries: 0 }).models.list())

    expect(error).toBeInstanceOf(NilegateTimeoutError)
    expect(error).toMatchObject({ timeoutMs: 50 })
  })

  test("the caller's abort ends the call with its reason, also while waiting to retry", async () => {
    gateway.answer({ status: 503, code: 'service_unavailable', headers: { 'retry-after': '30' } })
    const controller = new AbortController()
    const reason = new Error('the user went away')

    const pending = rejectionOf(client().models.list({ signal: controller.signal }))
    await gateway.firstRequest()
    controller.abort(reason)

    expect(await pending).toBe(reason)
    expect(gateway.requests).toHaveLength(1)
  })
})

describe('backoff', () => {
  test('doubles from 0.5 s up to 8 s, less up to a quarter at random', () => {
    expect([0, 1, 2, 3, 4, 5].map((attempt) => backoffMs(attempt, () => 0))).toEqual([500, 1000, 2000, 4000, 8000, 8000])
    expect([0, 4].map((attempt) => backoffMs(attempt, () => 1))).toEqual([375, 6000])
  })

  test("takes the gateway's Retry-After over backoff, up to a minute", () => {
    expect([retryDelayMs(0, 2), retryDelayMs(3, 60), retryDelayMs(0, 61)]).toEqual([2000, 60_000, null])
  })

  test('reads Retry-After as seconds or as an HTTP date', () => {
    const nowMs = Date.parse('2026-01-01T00:00:00Z')

    expect([parseRetryAfter('30', nowMs), parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', nowMs), parseRetryAfter('soon', nowMs), parseRetryAfter(null, nowMs)]).toEqual([30, 10, null, null])
  })
})
