import { expect, test } from 'bun:test'
import { chatRequest, embeddingsModel, keyIdentity, testApp } from '../support/test-app'

test('a success says when a place in the key\'s window frees up, in X-RateLimit-Reset-Requests (OpenAI\'s duration format)', async () => {
  let clockMs = Date.UTC(2026, 2, 12, 10)
  const { send } = await testApp({ identity: keyIdentity({ rpmLimit: 3 }), now: () => clockMs })
  const at = async (offsetMs: number, path: string, body: unknown) => {
    clockMs = Date.UTC(2026, 2, 12, 10) + offsetMs
    const response = await send('POST', path, JSON.stringify(body))
    await response.text()
    return [response.status, response.headers.get('x-ratelimit-remaining-requests'), response.headers.get('x-ratelimit-reset-requests')]
  }

  const first = await at(0, '/v1/chat/completions', chatRequest())
  const streamed = await at(15_250, '/v1/chat/completions', chatRequest({ stream: true }))
  const embedded = await at(59_999, '/v1/embeddings', { model: embeddingsModel, input: 'hello' })

  expect([first, streamed, embedded]).toEqual([
    // Alone in the window: its own place frees up a minute later.
    [200, '2', '1m0s'],
    [200, '1', '44.75s'],
    [200, '0', '1ms'],
  ])
})

test('a browser may read X-RateLimit-Reset-Requests (CORS exposes it)', async () => {
  const { send } = await testApp()

  const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()), { origin: 'https://app.example' })

  expect(response.headers.get('access-control-expose-headers')).toContain('X-RateLimit-Reset-Requests')
})
