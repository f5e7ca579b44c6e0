import { describe, expect, test } from 'bun:test'
import { chatModel } from '../../support/test-app'
import { observedApp } from './observed-app'

const noCredentials = { authorization: '' }

describe('GET /healthz', () => {
  test('answers 200 {"status":"ok"} without credentials, with a request id, and HEAD the same without a body', async () => {
    const { send, usage } = await observedApp()

    const get = await send('GET', '/healthz', { headers: noCredentials })
    const head = await send('HEAD', '/healthz', { headers: noCredentials })

    expect({ status: get.status, body: await get.json(), requestId: get.headers.get('x-request-id') }).toEqual({ status: 200, body: { status: 'ok' }, requestId: expect.stringMatching(/^req_/) })
    expect({ status: head.status, body: await head.text() }).toEqual({ status: 200, body: '' })
    expect(usage).toEqual([])
  })
})

describe('GET /readyz', () => {
  test('answers 200 with every check when the database answers, without Redis configured', async () => {
    const { send } = await observedApp()

    const response = await send('GET', '/readyz', { headers: noCredentials })

    expect({ status: response.status, body: await response.json() }).toEqual({ status: 200, body: { status: 'ok', checks: { database: 'ok', redis: 'not_configured', deployments: 'ok' } } })
  })

  test('answers 503 service_unavailable naming the database when it fails, without its error, with Retry-After', async () => {
    const { send } = await observedApp({ readiness: { database: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432 with a secret inside')) } })

    const response = await send('GET', '/readyz', { headers: noCredentials })
    const body = (await response.json()) as { error: { code: string; message: string }; checks: Record<string, string> }

    expect({ status: response.status, code: body.error.code, checks: body.checks }).toEqual({ status: 503, code: 'service_unavailable', checks: { database: 'failing', redis: 'not_configured', deployments: 'ok' } })
    expect(body.error.message).toBe('Not ready: the database is not answering.')
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  test('answers 503 naming Redis when it does not answer within the deadline', async () => {
    const { send } = await observedApp({ readiness: { redis: () => new Promise(() => {}), timeoutMs: 50 } })

    const response = await send('GET', '/readyz', { headers: noCredentials })
    const body = (await response.json()) as { error: { message: string }; checks: Record<string, string> }

    expect({ status: response.status, checks: body.checks, message: body.error.message }).toEqual({
      status: 503,
      checks: { database: 'ok', redis: 'failing', deployments: 'ok' },
      message: 'Not ready: Redis did not answer within 50 ms.',
    })
  })

  test('answers 503 naming the deployments when every live deployment has its circuit open', async () => {
    const { send, catalog, router } = await observedApp()
    for (const model of catalog.models) for (const deployment of model.deployments) router.recordProbe(deployment, false)

    const response = await send('GET', '/readyz', { headers: noCredentials })
    const body = (await response.json()) as { checks: Record<string, string> }

    expect({ status: response.status, deployments: body.checks.deployments }).toEqual({ status: 503, deployments: 'failing' })
  })

  test('answers 503 once the gateway is shutting down', async () => {
    const { send, readiness } = await observedApp()
    const before = await send('GET', '/readyz', { headers: noCredentials })

    readiness.drain()
    const after = await send('GET', '/readyz', { headers: noCredentials })

    expect([before.status, after.status]).toEqual([200, 503])
    expect(((await after.json()) as { error: { message: string } }).error.message).toContain('shutting down')
  })

  test('checks the database once for many probes within a second', async () => {
    let checks = 0
    const { send } = await observedApp({
      readiness: {
        maxAgeMs: 60_000,
        database: async () => {
          checks++
        },
      },
    })

    const answers = await Promise.all(Array.from({ length: 20 }, () => send('GET', '/readyz', { headers: noCredentials })))

    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200))
    expect(checks).toBe(1)
  })
})

describe('the probes', () => {
  test('are neither rate limited nor recorded as usage, however often they are asked', async () => {
    const { send, usage } = await observedApp()

    const statuses = await Promise.all(Array.from({ length: 300 }, (_, i) => send('GET', i % 2 === 0 ? '/healthz' : '/readyz', { headers: noCredentials }).then((response) => response.status)))

    expect(new Set(statuses)).toEqual(new Set([200]))
    expect(usage).toEqual([])
  })

  test('do not read the key: one that the gateway refuses elsewhere does not matter', async () => {
    const { send } = await observedApp()

    const refused = await send('POST', '/v1/chat/completions', { body: { model: chatModel, messages: [{ role: 'user', content: 'hi' }] }, headers: { authorization: 'Bearer sk-nothing-like-a-key' } })
    const probe = await send('GET', '/healthz', { headers: { authorization: 'Bearer sk-nothing-like-a-key' } })

    expect([refused.status, probe.status]).toEqual([401, 200])
  })
})
