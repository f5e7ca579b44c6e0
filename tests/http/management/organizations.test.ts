import { expect, test } from 'bun:test'
import { and, asc, eq } from 'drizzle-orm'
import { auditLogs, memberships } from '../../../server/adapters/postgres/schema'
import type { GovernanceChange } from '../../../server/core/governance/changes'
import type { MembershipRole } from '../../../server/core/governance/roles'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, type SignedInUser } from '../../support/management-app'

describeEachDatabase('creating organizations', (context) => {
  test('the creator becomes the owner; an Idempotency-Key replays the first answer and refuses another body', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const first = await gateway.send('POST', '/v1/organizations', { token: owner.token, body: { name: 'Acme' }, headers: { 'idempotency-key': 'create-acme' } })
    expect(first.status).toBe(201)
    expect(first.json).toMatchObject({ object: 'organization', name: 'Acme', role: 'owner', plan_tier: 'developer', status: 'active', balance_egp: '0.000000' })
    const replay = await gateway.send('POST', '/v1/organizations', { token: owner.token, body: { name: 'Acme' }, headers: { 'idempotency-key': 'create-acme' } })
    expect(replay.status).toBe(201)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(replay.json.id).toBe(first.json.id)
    const other = await gateway.send('POST', '/v1/organizations', { token: owner.token, body: { name: 'Other' }, headers: { 'idempotency-key': 'create-acme' } })
    expect(other.status).toBe(409)
    expect(other.json.error).toMatchObject({ type: 'conflict', code: 'conflict', param: 'Idempotency-Key' })
  })

  test('an API key on a management route is invalid_token_type; no header is missing_auth_header', async () => {
    const gateway = await managementApp(context.current.db)
    const wrongType = await gateway.send('POST', '/v1/organizations', { token: `sk-${'a'.repeat(48)}`, body: { name: 'x' } })
    expect(wrongType.status).toBe(401)
    expect(wrongType.json.error.code).toBe('invalid_token_type')
    const missing = await gateway.send('POST', '/v1/organizations', { body: { name: 'x' } })
    expect(missing.status).toBe(401)
    expect(missing.json.error.code).toBe('missing_auth_header')
  })
})

describeEachDatabase('the caller\'s organizations', (context) => {
  test('GET /v1/organizations lists the caller\'s organizations with their role, oldest membership first', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const stranger = await gateway.signUp()
    const own = await gateway.createOrganization(user, 'Mine')
    const joined = await gateway.createOrganization(stranger, 'Theirs')
    await gateway.createOrganization(stranger, 'Not mine')
    await context.current.db.drizzle.insert(memberships).values({ orgId: joined, userId: user.user.id, role: 'reader' })

    const first = await gateway.send('GET', '/v1/organizations?limit=1', { token: user.token })
    const second = await gateway.send('GET', `/v1/organizations?after=${first.json.last_id}`, { token: user.token })

    expect(first.json).toMatchObject({ object: 'list', data: [{ object: 'organization', id: own, name: 'Mine', role: 'owner' }], first_id: own, last_id: own, has_more: true })
    expect(second.json).toMatchObject({ data: [{ id: joined, name: 'Theirs', role: 'reader' }], has_more: false })
    expect(second.json.data).toHaveLength(1)
  })

  test('an unverified user may neither list nor create organizations', async () => {
    const gateway = await managementApp(context.current.db)
    const unverified = await gateway.signUp({ verified: false })

    const list = await gateway.send('GET', '/v1/organizations', { token: unverified.token })
    const create = await gateway.send('POST', '/v1/organizations', { token: unverified.token, body: { name: 'Early' } })

    expect([list.status, create.status]).toEqual([403, 403])
    expect([list.json.error.code, create.json.error.code]).toEqual(['email_not_verified', 'email_not_verified'])
  })
})

describeEachDatabase('the selected organization', (context) => {
  async function organizationWithOwner() {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner, 'Acme')
    async function join(role: MembershipRole): Promise<SignedInUser> {
      const user = await gateway.signUp()
      await context.current.db.drizzle.insert(memberships).values({ orgId, userId: user.user.id, role })
      return user
    }
    return { gateway, owner, orgId, join, as: (user: SignedInUser) => ({ token: user.token, headers: { 'openai-organization': orgId } }) }
  }

  test('GET /v1/organization is the user\'s first organization, or the one OpenAI-Organization names', async () => {
    const { gateway, owner, orgId } = await organizationWithOwner()
    const second = await gateway.createOrganization(owner, 'Second')

    const byDefault = await gateway.send('GET', '/v1/organization', { token: owner.token })
    const selected = await gateway.send('GET', '/v1/organization', { token: owner.token, headers: { 'openai-organization': second } })

    expect(byDefault.json).toMatchObject({ object: 'organization', id: orgId, name: 'Acme', role: 'owner', billing_time_zone: 'Africa/Cairo' })
    expect(selected.json).toMatchObject({ id: second, name: 'Second', role: 'owner' })
  })

  test('OpenAI-Organization naming an organization the caller does not belong to, or a made-up one, is 401 not_a_member', async () => {
    const { gateway, owner } = await organizationWithOwner()
    const stranger = await gateway.signUp()
    const foreign = await gateway.createOrganization(stranger)

    for (const orgId of [foreign, 'org_madeup']) {
      const response = await gateway.send('GET', '/v1/organization', { token: owner.token, headers: { 'openai-organization': orgId } })
      expect(response.status).toBe(401)
      expect(response.json.error.code).toBe('not_a_member')
    }
  })

  test('an owner or admin renames the organization and sets its billing time zone; the change is audited and published', async () => {
    const { gateway, owner, orgId, join, as } = await organizationWithOwner()
    const admin = await join('admin')
    const published: GovernanceChange[] = []
    gateway.changes.subscribe((change) => published.push(change))

    const renamed = await gateway.send('POST', '/v1/organization', { ...as(owner), body: { name: ' Acme Egypt ' } })
    const zoned = await gateway.send('POST', '/v1/organization', { ...as(admin), body: { billing_time_zone: 'europe/london' } })

    expect(renamed.json).toMatchObject({ object: 'organization', id: orgId, name: 'Acme Egypt', billing_time_zone: 'Africa/Cairo', role: 'owner' })
    expect(zoned.json).toMatchObject({ name: 'Acme Egypt', billing_time_zone: 'Europe/London', role: 'admin' })
    expect(published).toEqual([{ kind: 'organization', orgId }])
    const audit = await context.current.db.drizzle
      .select({ actorId: auditLogs.actorId, changes: auditLogs.changes })
      .from(auditLogs)
      .where(and(eq(auditLogs.orgId, orgId), eq(auditLogs.action, 'organization.updated')))
      .orderBy(asc(auditLogs.seq))
    expect(audit).toEqual([
      { actorId: owner.user.id, changes: { before: { name: 'Acme' }, after: { name: 'Acme Egypt' } } },
      { actorId: admin.user.id, changes: { before: { billing_time_zone: 'Africa/Cairo' }, after: { billing_time_zone: 'Europe/London' } } },
    ])
  })

  test('members and readers may read the organization but not change it', async () => {
    const { gateway, join, as } = await organizationWithOwner()

    for (const role of ['member', 'reader'] as const) {
      const user = await join(role)
      const read = await gateway.send('GET', '/v1/organization', as(user))
      const change = await gateway.send('POST', '/v1/organization', { ...as(user), body: { name: 'Mine now' } })
      expect(read.json).toMatchObject({ name: 'Acme', role })
      expect(change.status).toBe(403)
      expect(change.json.error.code).toBe('permission_denied')
    }
  })

  test('time zones must be IANA zones; operator-only settings are refused', async () => {
    const { gateway, owner, as } = await organizationWithOwner()

    const invalid = await Promise.all(
      [{ billing_time_zone: 'Mars/Olympus' }, { billing_time_zone: '+02:00' }, { name: '   ' }, { plan_tier: 'enterprise' }, { balance_egp: '100' }].map((body) =>
        gateway.send('POST', '/v1/organization', { ...as(owner), body }),
      ),
    )

    expect(invalid.map((response) => [response.status, response.json.error.code])).toEqual(Array(5).fill([400, 'invalid_request']))
    expect(invalid.slice(0, 3).map((response) => response.json.error.param)).toEqual(['billing_time_zone', 'billing_time_zone', 'name'])
    expect((await gateway.send('GET', '/v1/organization', as(owner))).json).toMatchObject({ name: 'Acme', plan_tier: 'developer', billing_time_zone: 'Africa/Cairo' })
  })
})
