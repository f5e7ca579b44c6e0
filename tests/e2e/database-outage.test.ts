import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateApiKey } from '../../server/core/api-keys'
import { createPostgresDatabase, postgresAddress } from '../support/databases'
import { startGateway, type DemoTenantJson, type RunningGateway } from '../support/gateway-process'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { chatModel } from '../support/test-app'

// README promises 503 service_unavailable while Postgres is away. A gateway reached Postgres
// through a proxy that is then cut and refuses new connections: every route that needs the
// database answered 500, and the log held drizzle's "Failed query: ... params: ...", with the key
// and session hashes looked up.
const sha256Hex = (text: string) => Bun.SHA256.hash(text, 'hex')

describe('Postgres stops answering', () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>
  let proxy: TcpProxy
  let gateway: RunningGateway
  let tenant: DemoTenantJson
  let sessionToken: string
  // A key of the right shape the gateway has never seen: refusing it needs the database.
  const unknownKey = generateApiKey().secret

  beforeAll(async () => {
    database = await createPostgresDatabase()
    proxy = startTcpProxy(postgresAddress())
    gateway = await startGateway({ database: 'postgres', sharedDatabaseUrl: proxy.via(database.url) })
    tenant = await gateway.createDemoTenant()
    const login = await fetch(`${gateway.baseUrl}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: tenant.email, password: tenant.password }) })
    sessionToken = ((await login.json()) as { access_token: string }).access_token
    proxy.refusing = true
    proxy.cut()
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
    proxy?.stop()
    await database?.drop()
  }, 60_000)

  const send = (method: string, path: string, token: string | null, body?: unknown) =>
    fetch(`${gateway.baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  test.each<[string, () => Promise<Response>]>([
    ['a login', () => send('POST', '/auth/login', null, { email: tenant.email, password: tenant.password })],
    ['a management GET', () => send('GET', '/organization/projects', sessionToken)],
    ['a management POST', () => send('POST', '/organization/projects', sessionToken, { name: 'made while the database is away' })],
    ['an inference request with a key not yet looked up', () => send('POST', '/chat/completions', unknownKey, { model: chatModel, messages: [{ role: 'user', content: 'Hello' }] })],
  ])('%s answers 503 service_unavailable with Retry-After', async (_, request) => {
    const response = await request()
    const body = (await response.json()) as { error: { type: string; code: string } }

    expect([response.status, body.error.type, body.error.code]).toEqual([503, 'service_unavailable', 'service_unavailable'])
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
  }, 40_000)

  test('the log names the outage without any statement, its parameters, or a key or session hash', async () => {
    await gateway.waitForOutput(/the database is not answering/)
    const log = gateway.output()

    expect(log).not.toContain('Failed query')
    expect(log).not.toContain('params:')
    for (const secret of [tenant.api_key, unknownKey, sessionToken]) {
      expect(log).not.toContain(secret)
      expect(log).not.toContain(sha256Hex(secret))
    }
  })
})
