import { expect, test } from 'bun:test'
import { apiKeys, auditLogs, idempotencyKeys, memberships } from '../../../server/adapters/postgres/schema'
import { hashApiKey } from '../../../server/core/api-keys'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'
import { auditRecords, createKey, createProject } from '../../support/project-keys'

describeEachDatabase('project API keys', (context) => {
  async function ownerWithProject() {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const project = await createProject(gateway, owner)
    return { gateway, owner, orgId, project, keysPath: `/v1/organization/projects/${project.id}/api_keys` }
  }

  test('the secret is answered once at creation and stored only as a hash; lists and audit records never show it', async () => {
    const { gateway, owner, keysPath } = await ownerWithProject()
    const expiresAt = Math.floor(Date.now() / 1000) + 3600

    const created = await gateway.send('POST', keysPath, {
      token: owner.token,
      body: { name: 'CI', expires_at: expiresAt, rpm_limit: 30, monthly_spend_cap_egp: '12.5', ip_allow_list: ['10.0.0.0/8', '2001:db8::/32'], scopes: ['chat.completions'] },
      headers: { 'idempotency-key': 'ignored-for-keys' },
    })
    const secret: string = created.json.value
    const listed = await gateway.send('GET', keysPath, { token: owner.token })
    const read = await gateway.send('GET', `${keysPath}/${created.json.id}`, { token: owner.token })

    expect(created.status).toBe(201)
    expect(secret).toMatch(/^sk-[0-9A-Za-z]{48}$/)
    expect(created.json).toEqual({
      object: 'organization.project.api_key',
      id: expect.stringMatching(/^key_/),
      name: 'CI',
      redacted_value: `${secret.slice(0, 7)}...${secret.slice(-4)}`,
      created_at: expect.any(Number),
      last_used_at: null,
      expires_at: expiresAt,
      revoked_at: null,
      status: 'active',
      rpm_limit: 30,
      monthly_spend_cap_egp: '12.500000',
      ip_allow_list: ['10.0.0.0/8', '2001:db8::/32'],
      scopes: ['chat.completions'],
      owner: { type: 'user', user: { id: owner.user.id, email: owner.email } },
      value: secret,
    })
    const { value: _shownOnce, ...withoutSecret } = created.json
    expect(read.json).toEqual(withoutSecret)
    expect(listed.json).toEqual({ object: 'list', data: [withoutSecret], first_id: created.json.id, last_id: created.json.id, has_more: false })
    const stored = await context.current.db.drizzle.select().from(apiKeys)
    const everythingStored = JSON.stringify([stored, await context.current.db.drizzle.select().from(auditLogs), await context.current.db.drizzle.select().from(idempotencyKeys)], (_, value) => (typeof value === 'bigint' ? String(value) : value))
    expect(everythingStored).not.toContain(secret.slice(3))
    expect(stored.find((row) => row.id === created.json.id)?.secretHash).toBe(hashApiKey(secret))
    expect(await auditRecords(context.current.db, 'api_key.created', created.json.id)).toHaveLength(1)
  })

  test('defaults: every scope, no expiry, no limits; expires_in_days sets the expiry', async () => {
    const { gateway, owner, project } = await ownerWithProject()

    const plain = await createKey(gateway, owner, project.id)
    const inTenDays = await createKey(gateway, owner, project.id, { expires_in_days: 10 })

    expect(plain).toMatchObject({ scopes: ['models.read', 'chat.completions', 'embeddings'], expires_at: null, rpm_limit: null, monthly_spend_cap_egp: null, ip_allow_list: [] })
    expect(Math.abs(inTenDays.expires_at - (Math.floor(Date.now() / 1000) + 10 * 86_400))).toBeLessThan(120)
  })

  test('refuses bad options with 400 naming the field', async () => {
    const { gateway, owner, keysPath } = await ownerWithProject()
    const create = (body: Record<string, unknown>) => gateway.send('POST', keysPath, { token: owner.token, body: { name: 'k', ...body } })

    const responses = await Promise.all([
      create({ ip_allow_list: ['10.0.0.0/8', '10.0.0.0/33'] }),
      create({ ip_allow_list: ['not-an-ip'] }),
      create({ scopes: [] }),
      create({ scopes: ['admin'] }),
      create({ expires_at: Math.floor(Date.now() / 1000) - 60 }),
      create({ expires_at: Math.floor(Date.now() / 1000) + 60, expires_in_days: 1 }),
      create({ rpm_limit: -1 }),
      create({ monthly_spend_cap_egp: '1.1234567' }),
      gateway.send('POST', keysPath, { token: owner.token, body: {} }),
    ])

    expect(responses.map((response) => [response.status, response.json.error.code, response.json.error.param])).toEqual([
      [400, 'invalid_request', 'ip_allow_list'],
      [400, 'invalid_request', 'ip_allow_list'],
      [400, 'invalid_request', 'scopes'],
      [400, 'invalid_request', 'scopes[0]'],
      [400, 'invalid_request', 'expires_at'],
      [400, 'invalid_request', 'expires_in_days'],
      [400, 'invalid_request', 'rpm_limit'],
      [400, 'invalid_request', 'monthly_spend_cap_egp'],
      [400, 'invalid_request', 'name'],
    ])
  })

  test('modifies a key, with an audit record of what changed; a revoked key answers deleted and cannot be modified', async () => {
    const { gateway, owner, project, keysPath } = await ownerWithProject()
    const key = await createKey(gateway, owner, project.id, { rpm_limit: 10 })
    const keyPath = `${keysPath}/${key.id}`

    const modified = await gateway.send('POST', keyPath, { token: owner.token, body: { name: 'renamed', rpm_limit: null, ip_allow_list: ['192.0.2.1'], scopes: ['embeddings'] } })
    const revoked = await gateway.send('DELETE', keyPath, { token: owner.token })
    const revokedAgain = await gateway.send('DELETE', keyPath, { token: owner.token })
    const afterRevoke = await gateway.send('GET', keyPath, { token: owner.token })
    const modifyRevoked = await gateway.send('POST', keyPath, { token: owner.token, body: { name: 'back' } })

    expect(modified.json).toMatchObject({ name: 'renamed', rpm_limit: null, ip_allow_list: ['192.0.2.1'], scopes: ['embeddings'], status: 'active' })
    const [update] = await auditRecords(context.current.db, 'api_key.updated', key.id)
    expect(update!.changes).toEqual({
      before: { name: 'test key', rpm_limit: 10, ip_allow_list: [], scopes: ['models.read', 'chat.completions', 'embeddings'] },
      after: { name: 'renamed', rpm_limit: null, ip_allow_list: ['192.0.2.1'], scopes: ['embeddings'] },
    })
    expect(revoked.json).toEqual({ object: 'organization.project.api_key.deleted', id: key.id, deleted: true })
    expect(revokedAgain.json).toEqual(revoked.json)
    expect(afterRevoke.json).toMatchObject({ status: 'revoked', revoked_at: expect.any(Number) })
    expect(modifyRevoked.status).toBe(409)
    expect(await auditRecords(context.current.db, 'api_key.revoked', key.id)).toHaveLength(1)
  })

  test("another organization's key, or a key asked for under another project, is 404", async () => {
    const { gateway, owner, project } = await ownerWithProject()
    const otherProject = await createProject(gateway, owner)
    const mine = await createKey(gateway, owner, project.id)
    const stranger = await gateway.signUp()
    await gateway.createOrganization(stranger)
    const theirProject = await createProject(gateway, stranger)
    const theirs = await createKey(gateway, stranger, theirProject.id)

    const responses = await Promise.all([
      gateway.send('GET', `/v1/organization/projects/${theirProject.id}/api_keys/${theirs.id}`, { token: owner.token }),
      gateway.send('DELETE', `/v1/organization/projects/${theirProject.id}/api_keys/${theirs.id}`, { token: owner.token }),
      gateway.send('POST', `/v1/organization/projects/${project.id}/api_keys/${theirs.id}`, { token: owner.token, body: { name: 'x' } }),
      gateway.send('GET', `/v1/organization/projects/${otherProject.id}/api_keys/${mine.id}`, { token: owner.token }),
      gateway.send('DELETE', `/v1/organization/projects/${otherProject.id}/api_keys/${mine.id}`, { token: owner.token }),
    ])

    expect(responses.map((response) => [response.status, response.json.error.code])).toEqual(Array(5).fill([404, 'not_found']))
    const stillActive = await gateway.send('GET', `/v1/organization/projects/${theirProject.id}/api_keys/${theirs.id}`, { token: stranger.token })
    expect(stillActive.json.status).toBe('active')
  })

  test('readers may list keys but not create or revoke them', async () => {
    const { gateway, owner, orgId, project, keysPath } = await ownerWithProject()
    const key = await createKey(gateway, owner, project.id)
    const reader = await gateway.signUp()
    await context.current.db.drizzle.insert(memberships).values({ orgId, userId: reader.user.id, role: 'reader' })

    const list = await gateway.send('GET', keysPath, { token: reader.token })
    const create = await gateway.send('POST', keysPath, { token: reader.token, body: { name: 'no' } })
    const revoke = await gateway.send('DELETE', `${keysPath}/${key.id}`, { token: reader.token })

    expect(list.json.data.map((item: { id: string }) => item.id)).toEqual([key.id])
    expect([create.status, create.json.error.code, revoke.status, revoke.json.error.code]).toEqual([403, 'permission_denied', 403, 'permission_denied'])
  })
})
