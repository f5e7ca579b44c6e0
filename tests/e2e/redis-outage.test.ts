import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { flushOwnRedis, useRedisServer } from '../support/redis-server'

// A gateway whose Redis (a server of the file's own) sits behind a proxy the test can silence or
// cut: admission fails closed (503, never unbilled inference), and comes back with Redis; counters
// Redis lost are rebuilt.
const redis = useRedisServer()
let proxy: TcpProxy
let gateway: RunningGateway
let apiKey: string

async function chat(): Promise<{ status: number; code: string | null; ms: number }> {
  const started = performance.now()
  const response = await fetch(`${gateway.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'nile/qwen2.5-7b-instruct', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    signal: AbortSignal.timeout(10_000),
  })
  const body = (await response.json()) as { error?: { code: string } }
  return { status: response.status, code: body.error?.code ?? null, ms: performance.now() - started }
}

async function eventually(expected: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs
  let last = 0
  while (performance.now() < deadline) {
    last = (await chat()).status
    if (last === expected) return last
    await Bun.sleep(50)
  }
  return last
}

describe('admission when Redis fails', () => {
  // Inside the block: its gateway stops before the file's Redis does.
  beforeAll(async () => {
    proxy = startTcpProxy({ hostname: '127.0.0.1', port: redis.current.port })
    gateway = await startGateway({ database: 'postgres', env: { REDIS_URL: proxy.via(redis.current.url()) } })
    apiKey = await gateway.createApiKey()
  }, 90_000)

  afterAll(async () => {
    await gateway?.stop()
    proxy?.stop()
  }, 60_000)

  test('a Redis that stops answering gives 503 service_unavailable within seconds, and service returns with it', async () => {
    expect((await chat()).status).toBe(200)

    proxy.silent = true
    const refused = await chat()
    proxy.silent = false
    proxy.cut()

    expect(refused).toMatchObject({ status: 503, code: 'service_unavailable' })
    expect(refused.ms).toBeLessThan(5_000)
    expect(await eventually(200, 10_000)).toBe(200)
  }, 30_000)

  test('counters Redis lost are rebuilt from the ledger before admitting again', async () => {
    expect((await chat()).status).toBe(200)

    await flushOwnRedis(redis.current.url())
    const afterLoss = await chat()

    expect(afterLoss.status).toBe(200)
  }, 30_000)
})
