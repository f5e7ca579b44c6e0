import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createPostgresDatabase } from '../support/databases'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { chatModel } from '../support/test-app'
import { waitFor } from '../support/wait-for'
import { flushRedisDatabase } from '../support/admission-redis'

// Two gateways on one Postgres and one Redis: a key revoked through one stops working on the
// other, which had it warm in its cache, because the change travels over Redis pub/sub.
const redisUrl = 'redis://127.0.0.1:6379/15'

let database: Awaited<ReturnType<typeof createPostgresDatabase>>
let gateways: RunningGateway[] = []

const flushRedis = () => flushRedisDatabase(redisUrl)

beforeAll(async () => {
  await flushRedis()
  database = await createPostgresDatabase()
  const options = { database: 'postgres' as const, sharedDatabaseUrl: database.url, env: { REDIS_URL: redisUrl } }
  gateways = await Promise.all([startGateway(options), startGateway(options)])
}, 90_000)

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()))
  await database?.drop()
  await flushRedis()
}, 60_000)

async function call(gateway: RunningGateway, method: string, path: string, token: string, body?: unknown) {
  const response = await fetch(`${gateway.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as any }
}

describe('two gateways sharing Postgres and Redis', () => {
  test('a key revoked through one gateway is refused by the other, which had it cached', async () => {
    const [a, b] = gateways as [RunningGateway, RunningGateway]
    const tenant = await a.createDemoTenant()
    const login = await fetch(`${a.baseUrl}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: tenant.email, password: tenant.password }) })
    const session = ((await login.json()) as { access_token: string }).access_token
    const key = await call(a, 'POST', `/organization/projects/${tenant.project_id}/api_keys`, session, { name: 'shared' })
    expect(key.status).toBe(201)
    const chat = () => call(b, 'POST', '/chat/completions', key.json.value, { model: chatModel, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 })
    expect((await chat()).status).toBe(200)

    expect((await call(a, 'DELETE', `/organization/projects/${tenant.project_id}/api_keys/${key.json.id}`, session)).status).toBe(200)
    const revokedAt = performance.now()
    let last = await chat()
    await waitFor(
      async () => {
        last = await chat()
        return last.status !== 200
      },
      { timeoutMs: 5_000, what: 'the other gateway refusing the revoked key' },
    )
    console.log(`the other gateway refused the revoked key ${(performance.now() - revokedAt).toFixed(0)} ms after the revoke answered`)
    expect([last.status, last.json.error.code]).toEqual([401, 'key_revoked'])
  }, 60_000)
})
