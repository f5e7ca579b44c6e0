import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, organizations } from '../../../server/adapters/postgres/schema'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'
import { auditRecords, chat, keyInNewOrganization } from '../../support/project-keys'
import { chatModel, embeddingsModel } from '../../support/test-app'
import { waitFor } from '../../support/wait-for'

const otherChatModel = 'nile/llama-3.3-70b-instruct'

describeEachDatabase('API keys on the inference routes', (context) => {
  test('a key made over HTTP works at once; revoking it answers 401 key_revoked on the next request', async () => {
    const gateway = await managementApp(context.current.db)
    const { owner, project, key, secret } = await keyInNewOrganization(gateway)

    const before = await chat(gateway, secret)
    await gateway.send('DELETE', `/v1/organization/projects/${project.id}/api_keys/${key.id}`, { token: owner.token })
    const after = await chat(gateway, secret)

    expect(before.status).toBe(200)
    expect(after.status).toBe(401)
    expect(after.json.error.code).toBe('key_revoked')
  })

  test('archiving the project stops its keys with a message that says so', async () => {
    const gateway = await managementApp(context.current.db)
    const { owner, project, secret } = await keyInNewOrganization(gateway)
    expect((await chat(gateway, secret)).status).toBe(200)

    await gateway.send('POST', `/v1/organization/projects/${project.id}/archive`, { token: owner.token })
    const after = await chat(gateway, secret)

    expect(after.status).toBe(401)
    expect(after.json.error.code).toBe('key_revoked')
    expect(after.json.error.message).toContain('archived')
  })

  test('an expired key answers 401 key_expired; a key without the scope 403 key_scope_insufficient', async () => {
    const gateway = await managementApp(context.current.db)
    const { secret: expiring, key } = await keyInNewOrganization(gateway, { key: { expires_in_days: 1 } })
    await context.current.db.drizzle.update(apiKeys).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(apiKeys.id, key.id))
    const { secret: embeddingsOnly } = await keyInNewOrganization(gateway, { key: { scopes: ['embeddings'] } })

    const expired = await chat(gateway, expiring)
    const outOfScope = await chat(gateway, embeddingsOnly)
    const inScope = await gateway.send('POST', '/v1/embeddings', { token: embeddingsOnly, body: { model: embeddingsModel, input: 'hello' } })

    expect([expired.status, expired.json.error.code]).toEqual([401, 'key_expired'])
    expect([outOfScope.status, outOfScope.json.error.code]).toEqual([403, 'key_scope_insufficient'])
    expect(inScope.status).toBe(200)
  })

  test('a session token on an inference route is 401 invalid_token_type; other non-sk- tokens invalid_api_key_format', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()

    const session = await chat(gateway, user.token)
    const models = await gateway.send('GET', '/v1/models', { token: user.token })
    const other = await chat(gateway, 'pk-something')

    expect([session.status, session.json.error.code, models.json.error.code]).toEqual([401, 'invalid_token_type', 'invalid_token_type'])
    expect(other.json.error.code).toBe('invalid_api_key_format')
  })

  test('the IP allow-list is checked against the socket peer, and X-Forwarded-For only behind a trusted proxy', async () => {
    const direct = await managementApp(context.current.db)
    const behindProxy = await managementApp(context.current.db, { trustedProxies: ['127.0.0.1'] })
    const { secret: loopbackOnly } = await keyInNewOrganization(direct, { key: { ip_allow_list: ['127.0.0.0/8', '2001:db8::/32'] } })
    const { secret: officeOnly, key: officeKey } = await keyInNewOrganization(direct, { key: { ip_allow_list: ['203.0.113.0/24'] } })
    const servers = [direct.listen(), behindProxy.listen()]
    const [directUrl, proxiedUrl] = servers.map((server) => server.url)
    const post = (url: string, secret: string, headers: Record<string, string> = {}) =>
      fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: chatModel, messages: [{ role: 'user', content: 'hi' }] }) })

    try {
      const listed = await post(directUrl!, loopbackOnly)
      const notListed = await post(directUrl!, officeOnly)
      const spoofed = await post(directUrl!, officeOnly, { 'x-forwarded-for': '203.0.113.9' })
      const proxied = await post(proxiedUrl!, officeOnly, { 'x-forwarded-for': '203.0.113.9' })
      const proxiedElsewhere = await post(proxiedUrl!, officeOnly, { 'x-forwarded-for': '198.51.100.7' })

      expect(listed.status).toBe(200)
      const refusals = await Promise.all([notListed, spoofed, proxiedElsewhere].map(async (response) => [response.status, ((await response.json()) as { error: { code: string } }).error.code]))
      expect(refusals).toEqual(Array(3).fill([403, 'ip_not_allowed']))
      expect(proxied.status).toBe(200)
    } finally {
      for (const server of servers) server.stop()
    }
    // One record per gateway instance, key and reason a minute: the second direct refusal adds none.
    await waitFor(async () => (await auditRecords(context.current.db, 'api_key.use_denied', officeKey.id)).length >= 2, { what: 'the refused uses to be audited' })
    const denials = await auditRecords(context.current.db, 'api_key.use_denied', officeKey.id)
    expect(denials.map(({ actorType, actorId, ip, changes }) => ({ actorType, actorId, ip, changes })).sort((a, b) => a.ip!.localeCompare(b.ip!))).toEqual(
      ['127.0.0.1', '198.51.100.7'].map((ip) => ({ actorType: 'api_key', actorId: officeKey.id, ip, changes: { before: null, after: { reason: 'ip_not_allowed', ip } } })),
    )
  })

  test("the organization's model allow-list gives 403 model_not_available and shapes GET /v1/models", async () => {
    const gateway = await managementApp(context.current.db)
    const { orgId, secret } = await keyInNewOrganization(gateway)
    await context.current.db.drizzle.update(organizations).set({ allowedModels: [otherChatModel, embeddingsModel] }).where(eq(organizations.id, orgId))

    const refused = await chat(gateway, secret)
    const allowed = await chat(gateway, secret, { model: otherChatModel })
    const models = await gateway.send('GET', '/v1/models', { token: secret })
    const retrieve = await gateway.send('GET', `/v1/models/${chatModel}`, { token: secret })

    expect([refused.status, refused.json.error.code, refused.json.error.param]).toEqual([403, 'model_not_available', 'model'])
    expect(allowed.status).toBe(200)
    expect(models.json.data.map((model: { id: string }) => model.id).sort()).toEqual([embeddingsModel, otherChatModel].sort())
    expect(retrieve.json.error.code).toBe('model_not_available')
  })

  test("the project's enabled models give 403 model_not_enabled_for_project and shape GET /v1/models", async () => {
    const gateway = await managementApp(context.current.db)
    const { owner, project, secret } = await keyInNewOrganization(gateway, { project: { enabled_models: [chatModel] } })

    const refused = await chat(gateway, secret, { model: otherChatModel })
    const allowed = await chat(gateway, secret)
    const models = await gateway.send('GET', '/v1/models', { token: secret })
    await gateway.send('POST', `/v1/organization/projects/${project.id}`, { token: owner.token, body: { enabled_models: null } })
    const afterEnablingAll = await chat(gateway, secret, { model: otherChatModel })

    expect([refused.status, refused.json.error.code]).toEqual([403, 'model_not_enabled_for_project'])
    expect(allowed.status).toBe(200)
    expect(models.json.data.map((model: { id: string }) => model.id)).toEqual([chatModel])
    expect(afterEnablingAll.status).toBe(200)
  })

  test("the project's spend cap and RPM override reach admission", async () => {
    const gateway = await managementApp(context.current.db)
    const capped = await keyInNewOrganization(gateway, { project: { monthly_spend_cap_egp: '0.000001' } })
    const throttled = await keyInNewOrganization(gateway, { project: { rpm_override: 1 } })

    const overCap = await chat(gateway, capped.secret)
    const first = await chat(gateway, throttled.secret)
    const second = await chat(gateway, throttled.secret)
    await gateway.send('POST', `/v1/organization/projects/${capped.project.id}`, { token: capped.owner.token, body: { monthly_spend_cap_egp: null } })
    const uncapped = await chat(gateway, capped.secret)

    expect([overCap.status, overCap.json.error.code]).toEqual([402, 'project_spend_cap_exceeded'])
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('1')
    expect([second.status, second.json.error.code]).toEqual([429, 'rate_limit_exceeded'])
    expect(uncapped.status).toBe(200)
  })
})
