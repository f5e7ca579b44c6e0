import { afterEach, describe, expect, test } from 'bun:test'
import { rawExchange, type RawResponse } from '../e2e/raw-http'
import { guardedApp, madeUpKey } from '../support/guarded-app'
import { chatRequest } from '../support/test-app'

const mib = 1024 * 1024
const running: Array<() => void> = []

afterEach(() => {
  for (const stop of running.splice(0)) stop()
})

/** A body that counts the bytes anyone pulled out of it: 1 KiB of JSON. */
function countedBody() {
  const counted = { bytesRead: 0 }
  const bytes = new TextEncoder().encode(JSON.stringify(chatRequest({ messages: [{ role: 'user', content: 'x'.repeat(1000) }] })))
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        counted.bytesRead += bytes.byteLength
        controller.enqueue(bytes)
        controller.close()
      },
    },
    // Nothing is pulled ahead of a read.
    { highWaterMark: 0 },
  )
  return { stream, counted }
}

async function listening(options: Parameters<typeof guardedApp>[0] = {}) {
  const guarded = await guardedApp(options)
  const server = guarded.listen()
  running.push(server.stop)
  return { ...guarded, port: server.port, url: server.url }
}

/** A POST that declares `declaredBytes`, sends `{` and holds the rest back. */
function heldBody(port: number, path: string, declaredBytes: number, headers: Record<string, string> = {}, timeoutMs = 5_000): Promise<RawResponse> {
  const lines = Object.entries({ host: 'localhost', 'content-type': 'application/json', 'content-length': String(declaredBytes), ...headers }).map(([name, value]) => `${name}: ${value}`)
  return rawExchange({ hostname: '127.0.0.1', port, head: [`POST ${path} HTTP/1.1`, ...lines].join('\r\n'), body: [Buffer.from('{')], timeoutMs })
}

function errorOf(response: RawResponse) {
  return (JSON.parse(response.body) as { error: { type: string; code: string; message: string; param: string | null } }).error
}

describe('the credential is checked from the headers before the body is read', () => {
  test.each([
    ['no Authorization header', null, 'missing_auth_header'],
    ['a made-up API key', madeUpKey(), 'invalid_api_key'],
    ['a session token', 'ngs_thisisasessiontokennotanapikey', 'invalid_token_type'],
  ])('a chat request with %s is answered 401 without a byte of its body read', async (_, secret, code) => {
    const { chat } = await guardedApp()
    const { stream, counted } = countedBody()

    const response = await chat(secret, stream)

    expect(response.status).toBe(401)
    expect((await response.json()).error.code).toBe(code)
    expect(counted.bytesRead).toBe(0)
  })

  test.each([
    ['no Authorization header', {}, 'missing_auth_header'],
    ['an API key', { authorization: `Bearer ${madeUpKey()}` }, 'invalid_token_type'],
    ['a session token that does not exist', { authorization: 'Bearer ngs_nosuchsession0000000000000000' }, 'invalid_api_key'],
  ])('a management request with %s is answered 401 without a byte of its body read', async (_, headers, code) => {
    const { app } = await guardedApp()
    const { stream, counted } = countedBody()

    const response = await app.handle(new Request('http://localhost/v1/organizations', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: stream }))

    expect(response.status).toBe(401)
    expect((await response.json()).error.code).toBe(code)
    expect(counted.bytesRead).toBe(0)
  })

  test('a declared size over the cap is still refused first, with 413, whatever the credential', async () => {
    const { port } = await listening()

    const response = await heldBody(port, '/v1/chat/completions', 40 * mib)

    expect(response.status).toBe(413)
    expect(errorOf(response).code).toBe('request_too_large')
  })

  test('eight anonymous connections declaring 32 MiB bodies are answered 401 at once and a chat request with a valid key goes on', async () => {
    const { port, url, secrets } = await listening()

    const held = await Promise.all(Array.from({ length: 8 }, () => heldBody(port, '/v1/chat/completions', 32 * mib)))
    const chat = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${secrets[0]}`, 'content-type': 'application/json' }, body: JSON.stringify(chatRequest()) })

    expect(held.map((response) => [response.status, errorOf(response).code])).toEqual(Array(8).fill([401, 'missing_auth_header']))
    expect(chat.status).toBe(200)
  })
})

describe('a body that stops arriving', () => {
  test('is answered 408 request_timeout in the error envelope after the idle timeout, and its connection is closed', async () => {
    const { port, secrets } = await listening({ bodyIdleTimeoutMs: 200 })
    const startedAt = performance.now()

    const response = await heldBody(port, '/v1/chat/completions', 1000, { authorization: `Bearer ${secrets[0]}` })

    expect(response.status).toBe(408)
    expect(errorOf(response)).toEqual({ type: 'invalid_request_error', code: 'request_timeout', param: null, message: expect.stringContaining('stopped arriving') })
    expect(response.headers.get('connection')).toBe('close')
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(200)
  })

  test('gives its bytes back to the budget when it is dropped', async () => {
    const { port, url, secrets } = await listening({ bodyBudgetBytes: mib, bodyIdleTimeoutMs: 200 })
    const chat = () => fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${secrets[1]}`, 'content-type': 'application/json' }, body: JSON.stringify(chatRequest()) })
    const holder = heldBody(port, '/v1/chat/completions', mib, { authorization: `Bearer ${secrets[0]}` })
    // The held body fills the whole budget until it is dropped.
    let whileHeld = await chat()
    while (whileHeld.status === 200) whileHeld = await chat()

    const dropped = await holder
    const afterwards = await chat()

    expect(whileHeld.status).toBe(503)
    expect(dropped.status).toBe(408)
    expect(afterwards.status).toBe(200)
  })
})

describe('one client cannot take more than its share of the body budget', () => {
  test('a key holding two 32 MiB bodies (a quarter of 256 MiB) gets 429 for a third, while another key is served', async () => {
    const { port, url, secrets } = await listening({ bodyIdleTimeoutMs: 300 })
    const asKey = { authorization: `Bearer ${secrets[0]}` }

    const answers = Array.from({ length: 3 }, () => heldBody(port, '/v1/chat/completions', 32 * mib, asKey))
    // The refusal comes at once; the two bodies let in wait for the idle timeout.
    const refused = await Promise.race(answers)
    const other = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${secrets[1]}`, 'content-type': 'application/json' }, body: JSON.stringify(chatRequest()) })

    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('2')
    expect(errorOf(refused).code).toBe('rate_limit_exceeded')
    expect(other.status).toBe(200)
    expect((await Promise.all(answers)).map((response) => response.status).sort()).toEqual([408, 408, 429])
  })

  test('an address holding login bodies gets 429 past its quarter of the budget', async () => {
    const { port } = await listening({ bodyIdleTimeoutMs: 300 })

    const answers = await Promise.all(Array.from({ length: 7 }, () => heldBody(port, '/v1/auth/login', 10 * mib)))

    // Six 10 MiB bodies fit in 64 MiB; the seventh does not, and is answered at once.
    expect(answers.map((response) => response.status).sort()).toEqual([408, 408, 408, 408, 408, 408, 429])
  })
})
