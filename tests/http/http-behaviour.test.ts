import { describe, expect, test } from 'bun:test'
import { chatRequest, testApp } from '../support/test-app'

const mib = 1024 * 1024

function chunkedBody(totalBytes: number): ReadableStream<Uint8Array> {
  let sent = 0
  const chunk = new Uint8Array(mib).fill(0x20)
  return new ReadableStream({
    pull(controller) {
      if (sent >= totalBytes) return controller.close()
      controller.enqueue(chunk)
      sent += chunk.byteLength
    },
  })
}

describe('request bodies', () => {
  test('a declared Content-Length over 32 MiB answers 413 quoting the size and the limit, with the request id in the error object and beside it', async () => {
    const { send } = await testApp()

    const response = await send('POST', '/v1/chat/completions', 'x', { 'content-length': String(40 * mib) })
    const body = await response.json()

    expect(response.status).toBe(413)
    expect(body.error.code).toBe('request_too_large')
    expect(body.error.message).toContain(String(40 * mib))
    expect(body.error.message).toContain('33554432')
    expect(body.error.request_id).toBe(response.headers.get('x-request-id')!)
    expect(body.request_id).toBe(body.error.request_id)
  })

  test('a chunked body is counted while it arrives and stops at the cap', async () => {
    const { app, secret } = await testApp()

    const response = await app.handle(new Request('http://localhost/v1/embeddings', { method: 'POST', headers: { authorization: `Bearer ${secret}` }, body: chunkedBody(33 * mib) }))

    expect(response.status).toBe(413)
    expect((await response.json()).error.message).toContain('33554432')
  })

  test('bodies over the in-flight budget answer 503 large_request_backpressure with Retry-After: 2', async () => {
    const { send } = await testApp({ bodyBudgetBytes: 1024 })

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ messages: [{ role: 'user', content: 'x'.repeat(2048) }] })))

    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('2')
    expect((await response.json()).error.code).toBe('large_request_backpressure')
  })

  test.each([
    ['truncated JSON', '{"model": "a", "messages": ['],
    ['a JSON array', '[1,2]'],
    ['an empty body', ''],
    ['deep nesting', `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`],
    ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ])('%s answers 400 invalid_request', async (_, body) => {
    const { send } = await testApp()

    const response = await send('POST', '/v1/chat/completions', body)

    expect(response.status).toBe(400)
    expect((await response.json()).error.code).toBe('invalid_request')
  })

  test('a body sent without a JSON Content-Type is still read as JSON', async () => {
    const { send } = await testApp()

    const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()), { 'content-type': 'application/x-www-form-urlencoded' })

    expect(response.status).toBe(200)
  })
})

describe('routes', () => {
  test('an unknown route answers 404 in the error envelope with a request id', async () => {
    const { send } = await testApp()

    const response = await send('GET', '/v2/whatever')

    expect(response.status).toBe(404)
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
    expect(await response.json()).toEqual({ error: { type: 'not_found', message: 'No route GET /v2/whatever.', code: 'not_found', param: null } })
  })

  test('a wrong method answers 405 with Allow', async () => {
    const { send } = await testApp()

    const response = await send('DELETE', '/v1/embeddings')

    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('POST')
    expect((await response.json()).error.code).toBe('method_not_allowed')
  })

  test('a browser preflight is answered with the requested headers allowed', async () => {
    const { app } = await testApp()

    const response = await app.handle(new Request('http://localhost/v1/chat/completions', { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, x-stainless-os' } }))

    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-headers')).toBe('authorization, x-stainless-os')
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
  })

  test('a browser reads the answers and errors of a POST; a POST without Origin gets no CORS headers', async () => {
    const { send } = await testApp()
    const browser = { origin: 'https://app.example' }

    const answered = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()), browser)
    const refused = await send('POST', '/v1/chat/completions', '{"model": 1}', browser)
    const fromServer = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()))
    const models = await send('GET', '/v1/models')

    for (const response of [answered, refused]) {
      expect(response.headers.get('access-control-allow-origin')).toBe('*')
      expect(response.headers.get('access-control-expose-headers')).toContain('X-Request-Id')
    }
    expect([answered.status, refused.status, fromServer.status]).toEqual([200, 400, 200])
    expect(fromServer.headers.get('access-control-allow-origin')).toBeNull()
    expect(fromServer.headers.get('x-request-id')).toStartWith('req_')
    expect(models.headers.get('access-control-allow-origin')).toBe('*')
  })
})
