import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createPostgresDatabase, postgresAddress } from '../support/databases'
import { startGateway, useGateway, type RunningGateway } from '../support/gateway-process'
import { useRedisServer } from '../support/redis-server'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { chatModel } from '../support/test-app'

// An operator's view of a running gateway: what a load balancer probes, what Prometheus scrapes,
// and the line each request leaves in the log.
const secretPrompt = 'the prompt nobody may read 51d0'

const chat = (gateway: RunningGateway, apiKey: string, body: Record<string, unknown>) =>
  fetch(`${gateway.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: chatModel, messages: [{ role: 'user', content: secretPrompt }], max_tokens: 8, ...body }),
  })

/** The JSON log line of the request `requestId`, once the gateway wrote it. */
async function requestLine(gateway: RunningGateway, requestId: string): Promise<Record<string, unknown>> {
  const [line] = await gateway.waitForOutput(new RegExp(`^\\{[^\\n]*"request_id":"${requestId}"[^\\n]*\\}$`, 'm'))
  return JSON.parse(line) as Record<string, unknown>
}

/** `/readyz`'s status and checks, polled until its status is `status` (readiness is reused for a second). */
type ReadyzBody = { status?: 'ok'; checks: Record<string, string>; error?: { message: string } }

async function readyzUntil(gateway: RunningGateway, status: number, timeoutMs = 15_000): Promise<{ status: number; body: ReadyzBody }> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const response = await fetch(`${gateway.origin}/readyz`)
    const answer = { status: response.status, body: (await response.json()) as ReadyzBody }
    if (answer.status === status || performance.now() > deadline) return answer
    await Bun.sleep(100)
  }
}

describe('an embedded gateway on its defaults', () => {
  const gateway = useGateway({ database: 'pglite' })
  let apiKey: string

  beforeAll(async () => {
    apiKey = await gateway.current.createApiKey()
  }, 60_000)

  test('answers /healthz and /readyz without credentials', async () => {
    const health = await fetch(`${gateway.current.origin}/healthz`)
    const ready = await fetch(`${gateway.current.origin}/readyz`)

    expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { status: 'ok' } })
    expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 200, body: { status: 'ok', checks: { database: 'ok', redis: 'not_configured', deployments: 'ok' } } })
  })

  test('logs one JSON line per request with its ids, tokens and cost, and neither the key, the prompt nor the completion', async () => {
    const plain = await chat(gateway.current, apiKey, {})
    const completion = ((await plain.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content
    const streamed = await chat(gateway.current, apiKey, { stream: true })
    await streamed.text()

    const plainLine = await requestLine(gateway.current, plain.headers.get('x-request-id')!)
    const streamedLine = await requestLine(gateway.current, streamed.headers.get('x-request-id')!)
    expect(plainLine).toMatchObject({ level: 30, msg: 'request', method: 'POST', route: '/v1/chat/completions', status: 200, model: chatModel, stream: false, org_id: expect.stringMatching(/^org_/), project_id: expect.stringMatching(/^proj_/), key_id: expect.stringMatching(/^key_/), deployment: expect.any(String), prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), cost_micros: expect.any(Number), latency_ms: expect.any(Number) })
    expect(streamedLine).toMatchObject({ status: 200, stream: true, ttft_ms: expect.any(Number) })
    const log = gateway.current.output()
    expect(completion.length).toBeGreaterThan(10)
    for (const forbidden of [apiKey, secretPrompt, completion]) expect(log).not.toContain(forbidden)
  })

  test('counts the requests, tokens and usage rows in GET /metrics', async () => {
    await (await chat(gateway.current, apiKey, {})).json()

    const text = await (await fetch(`${gateway.current.origin}/metrics`)).text()
    const value = (series: string) => Number(text.split('\n').find((line) => line.startsWith(`${series} `))?.split(' ')[1] ?? 0)

    expect(value(`nilegate_http_requests_total{route="/v1/chat/completions",method="POST",model="${chatModel}",status="200",code=""}`)).toBeGreaterThanOrEqual(1)
    expect(value(`nilegate_tokens_total{model="${chatModel}",kind="completion"}`)).toBeGreaterThan(0)
    expect(value(`nilegate_admissions_total{model="${chatModel}",outcome="admitted",status=""}`)).toBeGreaterThanOrEqual(1)
    expect(text).toContain('nilegate_usage_rows_queued ')
    expect(text).toContain('nilegate_database_call_duration_seconds_count{operation="ledger.readCounters"}')
    expect(text).toContain('process_resident_memory_bytes ')
  })
})

describe('a gateway with METRICS_TOKEN and LOG_LEVEL=silent', () => {
  const token = 'scrape-8b1f0c7e2d'
  const gateway = useGateway({ database: 'pglite', env: { METRICS_TOKEN: token, LOG_LEVEL: 'silent' } })

  test('answers /metrics only with the token, and writes no log line, only its listening line', async () => {
    const apiKey = await gateway.current.createApiKey()
    await (await chat(gateway.current, apiKey, {})).json()

    const without = await fetch(`${gateway.current.origin}/metrics`)
    const withToken = await fetch(`${gateway.current.origin}/metrics`, { headers: { authorization: `Bearer ${token}` } })

    expect([without.status, withToken.status]).toEqual([401, 200])
    expect(await withToken.text()).toContain('nilegate_http_requests_total{route="/v1/chat/completions"')
    expect(gateway.current.output()).toContain('nilegate listening on')
    expect(gateway.current.output()).not.toContain('{"level"')
  }, 60_000)
})

describe('a gateway whose Postgres or Redis stops answering', () => {
  const redis = useRedisServer()
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>
  let postgresProxy: TcpProxy
  let redisProxy: TcpProxy
  let gateway: RunningGateway

  beforeAll(async () => {
    database = await createPostgresDatabase()
    postgresProxy = startTcpProxy(postgresAddress())
    redisProxy = startTcpProxy({ hostname: '127.0.0.1', port: redis.current.port })
    gateway = await startGateway({ database: 'postgres', sharedDatabaseUrl: postgresProxy.via(database.url), env: { REDIS_URL: redisProxy.via(redis.current.url()) } })
  }, 90_000)
  afterAll(async () => {
    await gateway?.stop()
    postgresProxy?.stop()
    redisProxy?.stop()
    await database?.drop()
  }, 60_000)

  test('is ready with both, and /readyz answers 503 naming Redis while Redis is away, then the database while Postgres is', async () => {
    const ready = await readyzUntil(gateway, 200)

    redisProxy.refusing = true
    redisProxy.cut()
    const withoutRedis = await readyzUntil(gateway, 503)
    redisProxy.refusing = false
    const readyAgain = await readyzUntil(gateway, 200)
    postgresProxy.refusing = true
    postgresProxy.cut()
    const withoutPostgres = await readyzUntil(gateway, 503)
    const health = await fetch(`${gateway.origin}/healthz`)
    postgresProxy.refusing = false

    expect(ready).toEqual({ status: 200, body: { status: 'ok', checks: { database: 'ok', redis: 'ok', deployments: 'ok' } } })
    expect({ status: withoutRedis.status, checks: withoutRedis.body.checks }).toEqual({ status: 503, checks: { database: 'ok', redis: 'failing', deployments: 'ok' } })
    expect(withoutRedis.body.error?.message).toContain('Redis')
    expect(readyAgain.status).toBe(200)
    expect({ status: withoutPostgres.status, checks: withoutPostgres.body.checks }).toEqual({ status: 503, checks: { database: 'failing', redis: 'ok', deployments: 'ok' } })
    expect(withoutPostgres.body.error?.message).toContain('database')
    expect(health.status).toBe(200)
    await gateway.waitForOutput(/"event":"readiness"[^\n]*"msg":"not ready: [^"]*database/)
    expect(gateway.output()).toMatch(/"event":"redis"[^\n]*"level":40|"level":40[^\n]*"event":"redis"/)
  }, 90_000)
})
