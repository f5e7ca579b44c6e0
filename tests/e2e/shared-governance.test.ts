import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createPostgresDatabase } from '../support/databases'
import { forgetOrganizations } from '../support/forget-organizations'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { testRedisUrl } from '../support/redis-server'
import { chatModel } from '../support/test-app'
import { waitFor } from '../support/wait-for'

// Two gateways on one Postgres: a key revoked through one stops working on the other, which had it
// warm in its cache, and a model an operator retires through one is refused by the other, because
// the change travels over Redis pub/sub (beside Postgres LISTEN/NOTIFY). (Without the bus the
// other would see the retirement only at its once-a-minute re-read.) Two instances without Redis
// on one database refuse to run: see instance-lock.test.ts.

async function signIn(gateway: RunningGateway, tenant: { email: string; password: string }): Promise<string> {
  const login = await fetch(`${gateway.baseUrl}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: tenant.email, password: tenant.password }) })
  return ((await login.json()) as { access_token: string }).access_token
}

async function call(gateway: RunningGateway, method: string, path: string, token: string, body?: unknown) {
  const response = await fetch(`${gateway.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as any }
}

/**
 * Repeats `request` until it is not answered 200 (for up to 5 s, well short of a minute) and returns
 * that answer; 20 ms apart, so that the tries stay under the key's requests-per-minute limit.
 */
async function firstRefusal(request: () => ReturnType<typeof call>, what: string): ReturnType<typeof call> {
  let last = await request()
  await waitFor(
    async () => {
      await Bun.sleep(20)
      last = await request()
      return last.status !== 200
    },
    { timeoutMs: 5_000, what },
  )
  return last
}

describe.each<{ shared: string; withRedis: boolean }>([
  { shared: 'Postgres and Redis', withRedis: true },
])('two gateways sharing $shared', ({ withRedis }) => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>
  let gateways: RunningGateway[] = []
  let redisUrl: string | null = null

  beforeAll(async () => {
    if (withRedis) redisUrl = await testRedisUrl(15)
    database = await createPostgresDatabase()
    const env: Record<string, string> = redisUrl ? { REDIS_URL: redisUrl } : {}
    const options = { database: 'postgres' as const, sharedDatabaseUrl: database.url, env }
    gateways = await Promise.all([startGateway(options), startGateway(options)])
  }, 90_000)

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop()))
    if (redisUrl && database) await forgetOrganizations(redisUrl, database.url)
    await database?.drop()
  }, 60_000)

  test('a key revoked through one gateway is refused by the other, which had it cached', async () => {
    const [a, b] = gateways as [RunningGateway, RunningGateway]
    const tenant = await a.createDemoTenant()
    const session = await signIn(a, tenant)
    const key = await call(a, 'POST', `/organization/projects/${tenant.project_id}/api_keys`, session, { name: 'shared' })
    expect(key.status).toBe(201)
    const chat = () => call(b, 'POST', '/chat/completions', key.json.value, { model: chatModel, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 })
    expect((await chat()).status).toBe(200)

    expect((await call(a, 'DELETE', `/organization/projects/${tenant.project_id}/api_keys/${key.json.id}`, session)).status).toBe(200)
    const revokedAt = performance.now()
    const last = await firstRefusal(chat, 'the other gateway refusing the revoked key')
    console.log(`the other gateway refused the revoked key ${(performance.now() - revokedAt).toFixed(0)} ms after the revoke answered`)
    expect([last.status, last.json.error.code]).toEqual([401, 'key_revoked'])
  }, 60_000)

  test('a key revoked by hand in SQL is refused by both gateways, which had it cached', async () => {
    const tenant = await gateways[0]!.createDemoTenant()
    const chat = (gateway: RunningGateway) => call(gateway, 'POST', '/chat/completions', tenant.api_key, { model: chatModel, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 })
    for (const gateway of gateways) expect((await chat(gateway)).status).toBe(200)

    const sql = postgres(database.url, { max: 1, onnotice: () => {} })
    await sql`update api_keys set revoked_at = now() where project_id = ${tenant.project_id}`
    await sql.end({ timeout: 5 })

    // The database announces the edit: both refuse well before the minute they keep a covered key.
    for (const gateway of gateways) expect((await firstRefusal(() => chat(gateway), 'a gateway refusing the key revoked in SQL')).json.error.code).toBe('key_revoked')
  }, 60_000)

  test('a model an operator retires through one gateway is refused by the other', async () => {
    const [a, b] = gateways as [RunningGateway, RunningGateway]
    const tenant = await b.createDemoTenant()
    const sql = postgres(database.url, { max: 1, onnotice: () => {} })
    await sql`update users set is_operator = true where email = ${tenant.email}`
    await sql.end({ timeout: 5 })
    const model = 'nile/jais-30b-chat'
    const chat = () => call(b, 'POST', '/chat/completions', tenant.api_key, { model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 })
    expect((await chat()).status).toBe(200)

    const operator = await signIn(a, tenant)
    expect((await call(a, 'POST', `/admin/models/${model}/retire`, operator, { retires_on: '2026-01-01' })).status).toBe(200)
    const last = await firstRefusal(chat, 'the other gateway refusing the retired model')
    expect([last.status, last.json.error.code]).toEqual([403, 'model_sunset'])
  }, 60_000)

  test(withRedis ? 'failed logins through either gateway count against one limit' : 'each gateway counts failed logins on its own', async () => {
    const [a, b] = gateways as [RunningGateway, RunningGateway]
    const tenant = await a.createDemoTenant()
    const wrong = { email: tenant.email, password: 'not the password' }
    const logIn = (gateway: RunningGateway) =>
      fetch(`${gateway.baseUrl}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(wrong) })
    // Ten failures per address and IP in 15 minutes; half of them through each gateway.
    for (let attempt = 0; attempt < 10; attempt++) expect((await logIn(attempt % 2 === 0 ? a : b)).status).toBe(401)

    const next = await logIn(b)

    if (withRedis) {
      expect(next.status).toBe(429)
      expect(Number(next.headers.get('retry-after'))).toBeGreaterThan(0)
    } else {
      expect(next.status).toBe(401)
    }
  }, 60_000)
})
