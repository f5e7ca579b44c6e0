import { expect, test } from 'bun:test'
import { memberships } from '../../../server/adapters/postgres/schema'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, type SignedInUser } from '../../support/management-app'

const loginActions = 'actions[]=login.succeeded&actions[]=login.failed'

describeEachDatabase('logins in GET /v1/organization/audit_logs', (context) => {
  test("show a member's logins and failed logins, with IP and user agent, in each organization they belong to and in no other", async () => {
    const gateway = await managementApp(context.current.db, { trustedProxies: ['127.0.0.1'] })
    const [ownerA, ownerB, ownerC, member] = await Promise.all([gateway.signUp(), gateway.signUp(), gateway.signUp(), gateway.signUp()])
    const [orgA, orgB, orgC] = await Promise.all([gateway.createOrganization(ownerA), gateway.createOrganization(ownerB), gateway.createOrganization(ownerC)])
    await context.current.db.drizzle.insert(memberships).values([
      { orgId: orgA, userId: member.user.id, role: 'member' },
      { orgId: orgB, userId: member.user.id, role: 'reader' },
    ])
    const server = gateway.listen()
    const logIn = (password: string) =>
      fetch(`${server.url}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7', 'user-agent': 'nilegate-test/1.0' },
        body: JSON.stringify({ email: member.email, password }),
      })
    let sessionId: string
    try {
      expect((await logIn('not the password')).status).toBe(401)
      const login = await logIn(member.password)
      sessionId = ((await login.json()) as { id: string }).id
    } finally {
      server.stop()
    }
    const logins = (owner: SignedInUser, orgId: string) => gateway.send('GET', `/v1/organization/audit_logs?${loginActions}&actor_ids[]=${member.user.id}`, { token: owner.token, headers: { 'openai-organization': orgId } })

    const [inA, inB, inC] = await Promise.all([logins(ownerA, orgA), logins(ownerB, orgB), logins(ownerC, orgC)])

    const expected = [
      {
        type: 'login.succeeded',
        actor: { type: 'user', id: member.user.id, email: member.email },
        target: { type: 'session', id: sessionId },
        changes: { before: null, after: { user_agent: 'nilegate-test/1.0' } },
        ip_address: '203.0.113.7',
        effective_at: expect.any(Number),
      },
      {
        type: 'login.failed',
        actor: { type: 'user', id: member.user.id, email: member.email },
        target: { type: 'user', id: member.user.id },
        changes: { before: null, after: { reason: 'invalid_credentials', user_agent: 'nilegate-test/1.0' } },
        ip_address: '203.0.113.7',
        effective_at: expect.any(Number),
      },
    ]
    expect(inA.status).toBe(200)
    expect(inA.json.data).toMatchObject(expected)
    expect(inB.json.data).toMatchObject(expected)
    expect(inC.json.data).toEqual([])
  })

  test('keep the audit trail, logins included, from members and readers', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const reader = await gateway.addMember(orgId, 'reader')
    await gateway.send('POST', '/v1/auth/login', { body: { email: reader.email, password: reader.password } })

    const refused = await gateway.send('GET', `/v1/organization/audit_logs?${loginActions}`, { token: reader.token, headers: { 'openai-organization': orgId } })

    expect(refused.status).toBe(403)
    expect(refused.json.error.code).toBe('permission_denied')
  })
})
