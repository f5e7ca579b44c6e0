import { expect, test } from 'bun:test'
import { and, asc, eq } from 'drizzle-orm'
import { auditLogs, memberships } from '../../../server/adapters/postgres/schema'
import type { MembershipRole } from '../../../server/core/governance/roles'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, type SignedInUser } from '../../support/management-app'

describeEachDatabase('members of an organization', (context) => {
  /** An organization with an owner, and a way to add people to it with a role. */
  async function organizationWithOwner() {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp({ name: 'Olga Owner' })
    const orgId = await gateway.createOrganization(owner)
    async function join(role: MembershipRole, options: { name?: string } = {}): Promise<SignedInUser> {
      const user = await gateway.signUp(options)
      await context.current.db.drizzle.insert(memberships).values({ orgId, userId: user.user.id, role })
      return user
    }
    const as = (user: SignedInUser) => ({ token: user.token, headers: { 'openai-organization': orgId } })
    return { gateway, owner, orgId, join, as }
  }

  function auditOf(orgId: string, action: string) {
    return context.current.db.drizzle
      .select({ targetId: auditLogs.targetId, actorId: auditLogs.actorId, changes: auditLogs.changes })
      .from(auditLogs)
      .where(and(eq(auditLogs.orgId, orgId), eq(auditLogs.action, action)))
      .orderBy(asc(auditLogs.seq))
  }

  test('lists members in the order they joined, one page at a time', async () => {
    const { gateway, owner, orgId, join, as } = await organizationWithOwner()
    const admin = await join('admin', { name: 'Ada Admin' })
    const reader = await join('reader')

    const first = await gateway.send('GET', '/v1/organization/users?limit=2', as(reader))
    const second = await gateway.send('GET', `/v1/organization/users?limit=2&after=${first.json.last_id}`, as(reader))

    expect(first.status).toBe(200)
    expect(first.json).toEqual({
      object: 'list',
      data: [
        { object: 'organization.user', id: owner.user.id, name: 'Olga Owner', email: owner.email, role: 'owner', added_at: expect.any(Number) },
        { object: 'organization.user', id: admin.user.id, name: 'Ada Admin', email: admin.email, role: 'admin', added_at: expect.any(Number) },
      ],
      first_id: owner.user.id,
      last_id: admin.user.id,
      has_more: true,
    })
    expect(second.json).toMatchObject({ data: [{ id: reader.user.id, role: 'reader', name: null }], first_id: reader.user.id, last_id: reader.user.id, has_more: false })
    const unknownCursor = await gateway.send('GET', '/v1/organization/users?after=user_nobody', as(owner))
    expect(unknownCursor.status).toBe(400)
    expect(unknownCursor.json.error).toMatchObject({ code: 'invalid_request', param: 'after' })
    const badLimit = await gateway.send('GET', '/v1/organization/users?limit=101', as(owner))
    expect(badLimit.status).toBe(400)
    expect(badLimit.json.error.param).toBe('limit')
  })

  test('retrieves one member; a user of another organization or a made-up id is 404', async () => {
    const { gateway, owner, join, as } = await organizationWithOwner()
    const member = await join('member')
    const stranger = await gateway.signUp()
    await gateway.createOrganization(stranger)

    const found = await gateway.send('GET', `/v1/organization/users/${member.user.id}`, as(member))
    const foreign = await gateway.send('GET', `/v1/organization/users/${stranger.user.id}`, as(member))
    const madeUp = await gateway.send('GET', '/v1/organization/users/user_madeup', as(member))

    expect(found.json).toMatchObject({ object: 'organization.user', id: member.user.id, role: 'member' })
    expect([foreign.status, madeUp.status]).toEqual([404, 404])
    expect(foreign.json.error).toMatchObject({ code: 'not_found', param: 'user_id' })
    const change = await gateway.send('POST', `/v1/organization/users/${stranger.user.id}`, { ...as(owner), body: { role: 'reader' } })
    const remove = await gateway.send('DELETE', `/v1/organization/users/${stranger.user.id}`, as(owner))
    expect([change.status, remove.status]).toEqual([404, 404])
  })

  test('an owner changes a role; the change is audited with the role before and after', async () => {
    const { gateway, owner, orgId, join, as } = await organizationWithOwner()
    const member = await join('member')

    const changed = await gateway.send('POST', `/v1/organization/users/${member.user.id}`, { ...as(owner), body: { role: 'admin' } })

    expect(changed.status).toBe(200)
    expect(changed.json).toMatchObject({ object: 'organization.user', id: member.user.id, role: 'admin' })
    expect((await gateway.send('GET', `/v1/organization/users/${member.user.id}`, as(owner))).json.role).toBe('admin')
    expect(await auditOf(orgId, 'member.role_changed')).toEqual([{ targetId: member.user.id, actorId: owner.user.id, changes: { before: { role: 'member' }, after: { role: 'admin' } } }])
    const invalid = await gateway.send('POST', `/v1/organization/users/${member.user.id}`, { ...as(owner), body: { role: 'superuser' } })
    expect(invalid.status).toBe(400)
    expect(invalid.json.error.param).toBe('role')
  })

  test('readers and members may not change or remove anyone', async () => {
    const { gateway, join, as } = await organizationWithOwner()
    const reader = await join('reader')
    const member = await join('member')

    for (const [actor, target] of [[reader, member], [member, reader]] as const) {
      const change = await gateway.send('POST', `/v1/organization/users/${target.user.id}`, { ...as(actor), body: { role: 'reader' } })
      const remove = await gateway.send('DELETE', `/v1/organization/users/${target.user.id}`, as(actor))
      expect([change.status, remove.status]).toEqual([403, 403])
      expect([change.json.error.code, remove.json.error.code]).toEqual(['permission_denied', 'permission_denied'])
    }
    expect((await gateway.send('GET', `/v1/organization/users/${member.user.id}`, as(reader))).json.role).toBe('member')
  })

  test('an admin manages members but can neither grant, change nor remove the owner role', async () => {
    const { gateway, owner, join, as } = await organizationWithOwner()
    const admin = await join('admin')
    const member = await join('member')
    const reader = await join('reader')

    const promoteToOwner = await gateway.send('POST', `/v1/organization/users/${member.user.id}`, { ...as(admin), body: { role: 'owner' } })
    const demoteOwner = await gateway.send('POST', `/v1/organization/users/${owner.user.id}`, { ...as(admin), body: { role: 'member' } })
    const removeOwner = await gateway.send('DELETE', `/v1/organization/users/${owner.user.id}`, as(admin))
    const demoteMember = await gateway.send('POST', `/v1/organization/users/${member.user.id}`, { ...as(admin), body: { role: 'reader' } })
    const removeReader = await gateway.send('DELETE', `/v1/organization/users/${reader.user.id}`, as(admin))

    expect([promoteToOwner.status, demoteOwner.status, removeOwner.status]).toEqual([403, 403, 403])
    expect(promoteToOwner.json.error.message).toContain('Only owners')
    expect(demoteMember.json).toMatchObject({ id: member.user.id, role: 'reader' })
    expect(removeReader.json).toEqual({ object: 'organization.user.deleted', id: reader.user.id, deleted: true })
    expect((await gateway.send('GET', `/v1/organization/users/${owner.user.id}`, as(admin))).json.role).toBe('owner')
    expect((await gateway.send('GET', `/v1/organization/users/${reader.user.id}`, as(admin))).status).toBe(404)
  })

  test('the last owner can be neither demoted nor removed, even by themselves', async () => {
    const { gateway, owner, orgId, join, as } = await organizationWithOwner()

    const demote = await gateway.send('POST', `/v1/organization/users/${owner.user.id}`, { ...as(owner), body: { role: 'admin' } })
    const leave = await gateway.send('DELETE', `/v1/organization/users/${owner.user.id}`, as(owner))

    expect([demote.status, leave.status]).toEqual([409, 409])
    expect(demote.json.error).toMatchObject({ type: 'conflict', code: 'conflict', message: expect.stringContaining('last owner') })
    const second = await join('member')
    expect((await gateway.send('POST', `/v1/organization/users/${second.user.id}`, { ...as(owner), body: { role: 'owner' } })).json.role).toBe('owner')
    expect((await gateway.send('DELETE', `/v1/organization/users/${owner.user.id}`, as(owner))).status).toBe(200)
    expect((await gateway.send('DELETE', `/v1/organization/users/${second.user.id}`, as(second))).status).toBe(409)
    expect(await auditOf(orgId, 'member.removed')).toEqual([{ targetId: owner.user.id, actorId: owner.user.id, changes: { before: { role: 'owner', email: owner.email }, after: null } }])
  })

  test('any member may leave, and is then no member at all', async () => {
    const { gateway, orgId, join, as } = await organizationWithOwner()
    const reader = await join('reader')

    const left = await gateway.send('DELETE', `/v1/organization/users/${reader.user.id}`, as(reader))

    expect(left.json).toEqual({ object: 'organization.user.deleted', id: reader.user.id, deleted: true })
    const after = await gateway.send('GET', '/v1/organization/users', as(reader))
    expect(after.status).toBe(401)
    expect(after.json.error.code).toBe('not_a_member')
    expect((await auditOf(orgId, 'member.removed')).map((record) => record.targetId)).toEqual([reader.user.id])
  })

  test('a second organization never sees the first one\'s members', async () => {
    const first = await organizationWithOwner()
    const firstMember = await first.join('member')
    const secondOwner = await first.gateway.signUp()
    const secondOrgId = await first.gateway.createOrganization(secondOwner)
    const inSecond = { token: secondOwner.token, headers: { 'openai-organization': secondOrgId } }

    const list = await first.gateway.send('GET', '/v1/organization/users', inSecond)
    const change = await first.gateway.send('POST', `/v1/organization/users/${firstMember.user.id}`, { ...inSecond, body: { role: 'admin' } })
    const remove = await first.gateway.send('DELETE', `/v1/organization/users/${first.owner.user.id}`, inSecond)
    const cursor = await first.gateway.send('GET', `/v1/organization/users?after=${firstMember.user.id}`, inSecond)

    expect(list.json.data.map((member: { id: string }) => member.id)).toEqual([secondOwner.user.id])
    expect([change.status, remove.status, cursor.status]).toEqual([404, 404, 400])
    expect((await first.gateway.send('GET', '/v1/organization/users', first.as(first.owner))).json.data.map((member: { role: string }) => member.role)).toEqual(['owner', 'member'])
  })

  test('OpenAI-Organization naming an organization the caller does not belong to, or none at all, is 401 not_a_member', async () => {
    const { gateway, owner } = await organizationWithOwner()
    const stranger = await gateway.signUp()
    const foreignOrgId = await gateway.createOrganization(stranger)

    for (const orgId of [foreignOrgId, 'org_madeup']) {
      const response = await gateway.send('GET', '/v1/organization/users', { token: owner.token, headers: { 'openai-organization': orgId } })
      expect(response.status).toBe(401)
      expect(response.json.error.code).toBe('not_a_member')
    }
  })

  test('a refusal quotes at most the first 100 characters of the organization or project it was sent', async () => {
    const { gateway, owner } = await organizationWithOwner()
    const long = `org_${'x'.repeat(8_000)}`

    const organization = await gateway.send('GET', '/v1/organization/users', { token: owner.token, headers: { 'openai-organization': long } })
    const project = await gateway.send('GET', '/v1/organization/users', { token: owner.token, headers: { 'openai-project': long } })

    expect([organization.json.error.code, project.json.error.code]).toEqual(['not_a_member', 'project_not_in_org'])
    expect(organization.json.error.message).toContain(`'${long.slice(0, 100)}...'`)
    expect(project.json.error.message).toContain(`'${long.slice(0, 100)}...'`)
    expect(Math.max(organization.json.error.message.length, project.json.error.message.length)).toBeLessThan(250)
  })
})
