import { expect, spyOn, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import { auditLogs, invites, memberships } from '../../../server/adapters/postgres/schema'
import type { MembershipRole } from '../../../server/core/governance/roles'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, type SignedInUser } from '../../support/management-app'

describeEachDatabase('invites to an organization', (context) => {
  async function organizationWithOwner() {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner, 'Acme')
    const as = (user: SignedInUser) => ({ token: user.token, headers: { 'openai-organization': orgId } })
    async function join(role: MembershipRole): Promise<SignedInUser> {
      const user = await gateway.signUp()
      await context.current.db.drizzle.insert(memberships).values({ orgId, userId: user.user.id, role })
      return user
    }
    /** Invites `email` as `inviter` and returns the response with the token of the mail it sent. */
    async function invite(inviter: SignedInUser, email: string, role: MembershipRole = 'member') {
      const sent = gateway.mail.length
      const response = await gateway.send('POST', '/v1/organization/invites', { ...as(inviter), body: { email, role } })
      const mail = gateway.mail.slice(sent)
      return { response, mail, token: mail[0]?.text.match(/ngi_[0-9A-Za-z]{48}/)?.[0] }
    }
    return { gateway, owner, orgId, as, join, invite }
  }

  function auditOf(orgId: string, actions: string[]) {
    return context.current.db.drizzle
      .select({ action: auditLogs.action, targetId: auditLogs.targetId, changes: auditLogs.changes })
      .from(auditLogs)
      .where(eq(auditLogs.orgId, orgId))
      .orderBy(asc(auditLogs.seq))
      .then((records) => records.filter((record) => actions.includes(record.action)))
  }

  test('an invite is mailed with a token the API never shows, and the token works once', async () => {
    const { gateway, owner, orgId, as, invite } = await organizationWithOwner()
    const invitee = await gateway.signUp({ email: 'new.person@example.test' })

    const created = await invite(owner, 'New.Person@Example.test', 'admin')
    const accepted = await gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token: created.token } })
    const again = await gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token: created.token } })

    expect(created.response.status).toBe(201)
    expect(created.response.json).toEqual({
      object: 'organization.invite',
      id: expect.stringMatching(/^invite_/),
      email: 'new.person@example.test',
      role: 'admin',
      status: 'pending',
      invited_at: expect.any(Number),
      expires_at: created.response.json.invited_at + 7 * 24 * 60 * 60,
      accepted_at: null,
    })
    expect(created.mail).toEqual([{ to: 'new.person@example.test', subject: expect.stringContaining('Acme'), text: expect.stringContaining(created.token!), secrets: [created.token!] }])
    expect(accepted.status).toBe(200)
    expect(accepted.json).toMatchObject({ object: 'organization', id: orgId, name: 'Acme', role: 'admin' })
    expect(again.status).toBe(404)
    const members = await gateway.send('GET', '/v1/organization/users', as(invitee))
    expect(members.json.data.map((member: { id: string; role: string }) => [member.id, member.role])).toEqual([[owner.user.id, 'owner'], [invitee.user.id, 'admin']])
    const shown = await gateway.send('GET', `/v1/organization/invites/${created.response.json.id}`, as(owner))
    expect(shown.json).toMatchObject({ status: 'accepted', accepted_at: expect.any(Number) })
    const everything = JSON.stringify([created.response.json, shown.json, (await gateway.send('GET', '/v1/organization/invites', as(owner))).json, await auditOf(orgId, ['invite.created', 'invite.accepted'])])
    expect(everything).not.toContain(created.token!)
    expect((await auditOf(orgId, ['invite.created', 'invite.accepted', 'member.added'])).map((record) => record.action)).toEqual(['member.added', 'invite.created', 'invite.accepted', 'member.added'])
  })

  test('accepting with the session of another user, or an unknown token, is 404; the right user can still accept', async () => {
    const { gateway, owner, invite } = await organizationWithOwner()
    const invitee = await gateway.signUp()
    const someoneElse = await gateway.signUp()
    const created = await invite(owner, invitee.email)

    const wrongUser = await gateway.send('POST', '/v1/invites/accept', { token: someoneElse.token, body: { token: created.token } })
    const unknown = await gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token: `ngi_${'x'.repeat(48)}` } })
    const rightUser = await gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token: created.token } })

    expect([wrongUser.status, unknown.status, rightUser.status]).toEqual([404, 404, 200])
    expect(wrongUser.json.error).toEqual(unknown.json.error)
  })

  test('an invite or a role change without a role is refused, never taken for an owner', async () => {
    const { gateway, owner, as, join } = await organizationWithOwner()
    const member = await join('reader')
    const noRoleInvite = await gateway.send('POST', '/v1/organization/invites', { ...as(owner), body: { email: 'no-role@example.test' } })
    const noRoleChange = await gateway.send('POST', `/v1/organization/users/${member.user.id}`, { ...as(owner), body: {} })
    expect([noRoleInvite.status, noRoleInvite.json.error.param]).toEqual([400, 'role'])
    expect([noRoleChange.status, noRoleChange.json.error.param]).toEqual([400, 'role'])
    const members = await gateway.send('GET', `/v1/organization/users/${member.user.id}`, as(owner))
    expect(members.json.role).toBe('reader')
  })

  test('an unverified user cannot accept', async () => {
    const { gateway, owner, invite } = await organizationWithOwner()
    const invitee = await gateway.signUp({ verified: false })
    const created = await invite(owner, invitee.email)

    const response = await gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token: created.token } })

    expect(response.status).toBe(403)
    expect(response.json.error.code).toBe('email_not_verified')
  })

  test('a revoked invite cannot be accepted or revoked again; the address can be invited anew', async () => {
    const { gateway, owner, orgId, as, invite } = await organizationWithOwner()
    const invitee = await gateway.signUp()
    const created = await invite(owner, invitee.email)
    const inviteId = created.response.json.id

    const revoked = await gateway.send('DELETE', `/v1/organization/invites/${inviteId}`, as(owner))

    expect(revoked.json).toEqual({ object: 'organization.invite.deleted', id: inviteId, deleted: true })
    expect((await gateway.send('GET', `/v1/organization/invites/${inviteId}`, as(owner))).json.status).toBe('revoked')
    expect((await gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token: created.token } })).status).toBe(404)
    const twice = await gateway.send('DELETE', `/v1/organization/invites/${inviteId}`, as(owner))
    expect(twice.status).toBe(409)
    expect((await invite(owner, invitee.email)).response.status).toBe(201)
    expect(await auditOf(orgId, ['invite.revoked'])).toEqual([{ action: 'invite.revoked', targetId: inviteId, changes: { before: { status: 'pending' }, after: { status: 'revoked' } } }])
  })

  test('an invite expires after seven days', async () => {
    const { gateway, owner, as, invite } = await organizationWithOwner()
    const invitee = await gateway.signUp()
    const created = await invite(owner, invitee.email)
    await context.current.db.drizzle.update(invites).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(invites.id, created.response.json.id))

    const accept = await gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token: created.token } })

    expect(accept.status).toBe(404)
    expect((await gateway.send('GET', `/v1/organization/invites/${created.response.json.id}`, as(owner))).json.status).toBe('expired')
    expect((await gateway.send('DELETE', `/v1/organization/invites/${created.response.json.id}`, as(owner))).status).toBe(409)
    expect((await invite(owner, invitee.email)).response.status).toBe(201)
  })

  test('an existing member or an address with a pending invite cannot be invited again', async () => {
    const { gateway, owner, invite, join } = await organizationWithOwner()
    const member = await join('member')
    await invite(owner, 'pending@example.test')

    const existing = await invite(owner, member.email.toUpperCase())
    const pending = await invite(owner, 'PENDING@example.test')

    expect([existing.response.status, pending.response.status]).toEqual([409, 409])
    expect(existing.response.json.error).toMatchObject({ code: 'conflict', param: 'email', message: expect.stringContaining('already a member') })
    expect(pending.response.json.error.message).toContain('pending invite')
    expect([existing.mail, pending.mail]).toEqual([[], []])
  })

  test('only owners invite owners; readers and members invite nobody', async () => {
    const { gateway, as, invite, join } = await organizationWithOwner()
    const admin = await join('admin')
    const member = await join('member')
    const reader = await join('reader')

    const adminInvitesOwner = await invite(admin, 'boss@example.test', 'owner')
    const adminInvitesMember = await invite(admin, 'worker@example.test', 'member')
    const denied = [await invite(member, 'a@example.test'), await invite(reader, 'b@example.test')]

    expect(adminInvitesOwner.response.status).toBe(403)
    expect(adminInvitesOwner.response.json.error.code).toBe('permission_denied')
    expect(adminInvitesMember.response.status).toBe(201)
    expect(denied.map(({ response }) => [response.status, response.json.error.code])).toEqual([[403, 'permission_denied'], [403, 'permission_denied']])
    expect((await gateway.send('DELETE', `/v1/organization/invites/${adminInvitesMember.response.json.id}`, as(reader))).status).toBe(403)
  })

  test('bodies are validated', async () => {
    const { owner, invite, gateway, as } = await organizationWithOwner()

    const badEmail = await invite(owner, 'not-an-address')
    const badRole = await gateway.send('POST', '/v1/organization/invites', { ...as(owner), body: { email: 'x@example.test', role: 'god' } })
    const extra = await gateway.send('POST', '/v1/organization/invites', { ...as(owner), body: { email: 'x@example.test', role: 'reader', token: 'mine' } })

    expect([badEmail.response.status, badRole.status, extra.status]).toEqual([400, 400, 400])
    expect([badEmail.response.json.error.param, badRole.json.error.param]).toEqual(['email', 'role'])
  })

  test('lists invites in the order they were made, one page at a time', async () => {
    const { gateway, owner, as, invite } = await organizationWithOwner()
    const ids: string[] = []
    for (const name of ['a', 'b', 'c']) ids.push((await invite(owner, `${name}@example.test`)).response.json.id)

    const first = await gateway.send('GET', '/v1/organization/invites?limit=2', as(owner))
    const second = await gateway.send('GET', `/v1/organization/invites?limit=2&after=${first.json.last_id}`, as(owner))

    expect(first.json).toMatchObject({ object: 'list', first_id: ids[0], last_id: ids[1], has_more: true })
    expect(first.json.data.map((item: { email: string }) => item.email)).toEqual(['a@example.test', 'b@example.test'])
    expect(second.json).toMatchObject({ data: [{ id: ids[2], object: 'organization.invite', status: 'pending' }], has_more: false })
  })

  test('a second organization never sees the first one\'s invites', async () => {
    const first = await organizationWithOwner()
    const created = await first.invite(first.owner, 'guest@example.test')
    const secondOwner = await first.gateway.signUp()
    const secondOrgId = await first.gateway.createOrganization(secondOwner)
    const inSecond = { token: secondOwner.token, headers: { 'openai-organization': secondOrgId } }

    const list = await first.gateway.send('GET', '/v1/organization/invites', inSecond)
    const get = await first.gateway.send('GET', `/v1/organization/invites/${created.response.json.id}`, inSecond)
    const revoke = await first.gateway.send('DELETE', `/v1/organization/invites/${created.response.json.id}`, inSecond)

    expect(list.json).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false })
    expect([get.status, revoke.status]).toEqual([404, 404])
    expect(get.json.error).toMatchObject({ code: 'not_found', param: 'invite_id' })
    expect((await first.gateway.send('GET', `/v1/organization/invites/${created.response.json.id}`, first.as(first.owner))).json.status).toBe('pending')
  })

  test('an Idempotency-Key replays the invite without mailing twice', async () => {
    const { gateway, owner, as } = await organizationWithOwner()
    const request = { ...as(owner), body: { email: 'once@example.test', role: 'reader' }, headers: { ...as(owner).headers, 'idempotency-key': 'invite-once' } }

    const first = await gateway.send('POST', '/v1/organization/invites', request)
    const replay = await gateway.send('POST', '/v1/organization/invites', request)

    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(replay.json).toEqual(first.json)
    expect(gateway.mail.filter((mail) => mail.to === 'once@example.test')).toHaveLength(1)
  })

  test('when the mail cannot be sent, the invite is withdrawn so the address can be invited again', async () => {
    const { gateway, owner, as } = await organizationWithOwner()
    const send = gateway.management.mailer.send
    gateway.management.mailer.send = async () => {
      throw new Error('smtp down')
    }
    const logged = spyOn(console, 'error').mockImplementation(() => {})

    const failed = await gateway.send('POST', '/v1/organization/invites', { ...as(owner), body: { email: 'unlucky@example.test', role: 'reader' } })

    expect(logged).toHaveBeenCalledTimes(1)
    logged.mockRestore()
    gateway.management.mailer.send = send
    expect(failed.status).toBe(503)
    expect((await gateway.send('GET', '/v1/organization/invites', as(owner))).json.data.map((item: { status: string }) => item.status)).toEqual(['revoked'])
    expect((await gateway.send('POST', '/v1/organization/invites', { ...as(owner), body: { email: 'unlucky@example.test', role: 'reader' } })).status).toBe(201)
  })
})
