import { expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { auditLogs, memberships, users } from '../../../server/adapters/postgres/schema'
import { randomBase62 } from '../../../server/core/api-keys'
import { InProcessLoginLimiter } from '../../../server/core/login-limiter'
import type { MailMessage } from '../../../server/core/mail'
import { describeEachDatabase, type TestDatabase } from '../../support/databases'
import { managementApp, testPassword } from '../../support/management-app'

const password = 'a long enough password'
const twelveHoursS = 12 * 60 * 60

function newEmail(): string {
  return `user-${randomBase62(10).toLowerCase()}@example.test`
}

/** The verification token of the latest mail to `to`. */
function verificationToken(mail: MailMessage[], to: string): string {
  const message = mail.findLast((candidate) => candidate.to === to)
  const token = message?.text.match(/ngv_[0-9A-Za-z]{48}/)?.[0]
  if (!token) throw new Error(`no verification mail to ${to}`)
  return token
}

async function auditActions(database: TestDatabase, actorId: string) {
  const rows = await database.db.drizzle.select().from(auditLogs).where(eq(auditLogs.actorId, actorId))
  return rows.map((row) => row.action)
}

describeEachDatabase('accounts and sessions under /v1/auth', (context) => {
  test('sign up, verify with the mailed token, log in, read /me, log out: the token then answers token_revoked', async () => {
    const gateway = await managementApp(context.current.db)
    const email = newEmail()

    const signup = await gateway.send('POST', '/v1/auth/signup', { body: { email: `  ${email.toUpperCase()} `, password, name: 'Ada' } })
    expect(signup.status).toBe(201)
    expect(signup.json).toEqual({ object: 'user', id: expect.stringMatching(/^user_/), email, name: 'Ada', email_verified: false, created_at: expect.any(Number) })
    const token = verificationToken(gateway.mail, email)

    const verified = await gateway.send('POST', '/v1/auth/verify_email', { body: { token } })
    expect(verified.status).toBe(200)
    expect(verified.json).toMatchObject({ id: signup.json.id, email_verified: true })
    const reused = await gateway.send('POST', '/v1/auth/verify_email', { body: { token } })
    expect(reused.status).toBe(400)
    expect(reused.json.error).toMatchObject({ code: 'invalid_request', param: 'token' })

    const login = await gateway.send('POST', '/v1/auth/login', { body: { email: email.toUpperCase(), password } })
    // Read before toMatchObject: Bun 1.4 writes asymmetric matchers into the object it checks.
    const accessToken = login.json.access_token as string
    expect(login.status).toBe(200)
    expect(login.json).toMatchObject({ object: 'session', access_token: expect.stringMatching(/^ngs_[0-9A-Za-z]{48}$/), token_type: 'bearer', user: { id: signup.json.id, email_verified: true } })
    expect(Math.abs(login.json.expires_at - (Date.now() / 1000 + twelveHoursS))).toBeLessThan(60)
    const orgId = await gateway.createOrganization({ user: login.json.user, token: accessToken, email, password }, 'Ada Labs')

    const me = await gateway.send('GET', '/v1/auth/me', { token: accessToken })
    expect(me.status).toBe(200)
    expect(me.json).toMatchObject({ object: 'user', id: signup.json.id, memberships: [{ organization_id: orgId, organization_name: 'Ada Labs', role: 'owner' }] })

    const logout = await gateway.send('POST', '/v1/auth/logout', { token: accessToken })
    expect(logout.status).toBe(200)
    expect(logout.json).toEqual({ object: 'session.revoked', id: login.json.id, revoked: true })
    const after = await gateway.send('GET', '/v1/auth/me', { token: accessToken })
    expect(after.status).toBe(401)
    expect(after.json.error.code).toBe('token_revoked')
    expect(await auditActions(context.current, signup.json.id)).toEqual(expect.arrayContaining(['user.created', 'user.email_verified', 'login.succeeded', 'logout']))
  })

  test('a verification token expires after 24 hours; an unknown one is refused alike', async () => {
    const gateway = await managementApp(context.current.db)
    const email = newEmail()
    await gateway.send('POST', '/v1/auth/signup', { body: { email, password } })
    const nextDay = await managementApp(context.current.db, { now: () => Date.now() + 25 * 60 * 60 * 1000 })

    const expired = await nextDay.send('POST', '/v1/auth/verify_email', { body: { token: verificationToken(gateway.mail, email) } })
    const unknown = await gateway.send('POST', '/v1/auth/verify_email', { body: { token: `ngv_${randomBase62(48)}` } })

    expect(expired.status).toBe(400)
    expect(expired.json.error).toMatchObject({ code: 'invalid_request', param: 'token' })
    expect(unknown.json.error).toEqual(expired.json.error)
  })

  test('an address already registered is 409 conflict; a bad address or short password is 400 naming the field', async () => {
    const gateway = await managementApp(context.current.db)
    const email = newEmail()
    expect((await gateway.send('POST', '/v1/auth/signup', { body: { email, password } })).status).toBe(201)

    const again = await gateway.send('POST', '/v1/auth/signup', { body: { email: email.toUpperCase(), password } })
    const badAddress = await gateway.send('POST', '/v1/auth/signup', { body: { email: 'not-an-address', password } })
    const shortPassword = await gateway.send('POST', '/v1/auth/signup', { body: { email: newEmail(), password: 'short' } })

    expect(again.status).toBe(409)
    expect(again.json.error).toMatchObject({ type: 'conflict', code: 'conflict', param: 'email' })
    expect(badAddress.status).toBe(400)
    expect(badAddress.json.error).toMatchObject({ code: 'invalid_request', param: 'email' })
    expect(shortPassword.status).toBe(400)
    expect(shortPassword.json.error).toMatchObject({ code: 'invalid_request', param: 'password' })
  })

  test('a wrong password and an unknown address are the same 401 invalid_credentials, and both are audited as login.failed', async () => {
    const gateway = await managementApp(context.current.db)
    const known = await gateway.signUp()
    const unknown = newEmail()

    const wrongPassword = await gateway.send('POST', '/v1/auth/login', { body: { email: known.email, password: 'not the password' } })
    const unknownAddress = await gateway.send('POST', '/v1/auth/login', { body: { email: unknown, password: 'not the password' } })

    expect(wrongPassword.status).toBe(401)
    expect(wrongPassword.json.error).toEqual({ type: 'authentication_error', code: 'invalid_credentials', message: 'Incorrect e-mail address or password.', param: null })
    expect(unknownAddress.json.error).toEqual(wrongPassword.json.error)
    const failed = await context.current.db.drizzle.select().from(auditLogs).where(eq(auditLogs.action, 'login.failed'))
    expect(failed.find((row) => row.actorId === known.user.id)).toMatchObject({ actorType: 'user', actorEmail: known.email, orgId: null, changes: { before: null, after: { reason: 'invalid_credentials', user_agent: null } } })
    expect(failed.find((row) => row.actorEmail === unknown)).toMatchObject({ actorType: 'user', actorId: 'unknown', orgId: null, changes: { before: null, after: { reason: 'invalid_credentials', user_agent: null } } })
  })

  test('attempts from one client IP over its limit answer 429', async () => {
    const gateway = await managementApp(context.current.db, { loginLimiter: new InProcessLoginLimiter({ attemptsPerIp: 2, windowMs: 60_000 }, () => 0) })
    const server = gateway.listen()
    try {
      const attempt = () => fetch(`${server.url}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: newEmail(), password }) })
      expect((await attempt()).status).toBe(401)
      expect((await attempt()).status).toBe(401)

      const limited = await attempt()

      expect(limited.status).toBe(429)
      expect(limited.headers.get('retry-after')).toBe('60')
      expect(((await limited.json()) as { error: { message: string } }).error.message).toContain('Too many attempts from your address')
    } finally {
      server.stop()
    }
  })

  test('an unverified user can log in but gets 403 email_not_verified on dashboard routes until a resent token is used', async () => {
    const gateway = await managementApp(context.current.db)
    const email = newEmail()
    await gateway.send('POST', '/v1/auth/signup', { body: { email, password } })
    const login = await gateway.send('POST', '/v1/auth/login', { body: { email, password } })
    const token = login.json.access_token as string

    const unverified = await gateway.send('POST', '/v1/organizations', { token, body: { name: 'Too early' } })
    const resent = await gateway.send('POST', '/v1/auth/verify_email/resend', { token, headers: { 'idempotency-key': 'resend-1' } })
    const replayed = await gateway.send('POST', '/v1/auth/verify_email/resend', { token, headers: { 'idempotency-key': 'resend-1' } })
    const verified = await gateway.send('POST', '/v1/auth/verify_email', { body: { token: verificationToken(gateway.mail, email) } })
    const relogin = await gateway.send('POST', '/v1/auth/login', { body: { email, password } })
    const created = await gateway.send('POST', '/v1/organizations', { token: relogin.json.access_token, body: { name: 'Now' } })
    const resentAgain = await gateway.send('POST', '/v1/auth/verify_email/resend', { token: relogin.json.access_token })

    expect(login.status).toBe(200)
    expect(login.json.user.email_verified).toBe(false)
    expect(unverified.status).toBe(403)
    expect(unverified.json.error.code).toBe('email_not_verified')
    expect(resent.status).toBe(202)
    expect(resent.json).toMatchObject({ object: 'email_verification', email })
    expect(replayed.headers.get('idempotent-replayed')).toBe('true')
    expect(gateway.mail.filter((message) => message.to === email)).toHaveLength(2)
    expect(verified.json.email_verified).toBe(true)
    expect(created.status).toBe(201)
    expect(resentAgain.status).toBe(409)
  })

  test('a disabled user gets user_disabled on session routes and, with the right password only, at login', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    await context.current.db.drizzle.update(users).set({ disabledAt: new Date() }).where(eq(users.id, user.user.id))

    const me = await gateway.send('GET', '/v1/auth/me', { token: user.token })
    const login = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: user.password } })
    const guess = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: 'a wrong guess' } })

    expect(me.status).toBe(401)
    expect(me.json.error.code).toBe('user_disabled')
    expect(login.status).toBe(401)
    expect(login.json.error.code).toBe('user_disabled')
    expect(guess.json.error.code).toBe('invalid_credentials')
  })

  test('deleting the account takes the password; its sessions then answer user_not_found, and so does login', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const user = await gateway.signUp()
    await context.current.db.drizzle.insert(memberships).values({ orgId, userId: user.user.id, role: 'member' })

    const wrongPassword = await gateway.send('DELETE', '/v1/auth/me', { token: user.token, body: { password: 'not it' } })
    const deleted = await gateway.send('DELETE', '/v1/auth/me', { token: user.token, body: { password: testPassword } })
    const me = await gateway.send('GET', '/v1/auth/me', { token: user.token })
    const login = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: testPassword } })

    expect(wrongPassword.status).toBe(401)
    expect(wrongPassword.json.error).toMatchObject({ code: 'invalid_credentials', param: 'password' })
    expect(deleted.status).toBe(200)
    expect(deleted.json).toEqual({ object: 'user.deleted', id: user.user.id, deleted: true })
    expect(me.json.error.code).toBe('user_not_found')
    expect(login.json.error.code).toBe('user_not_found')
    expect(await context.current.db.drizzle.select().from(memberships).where(eq(memberships.userId, user.user.id))).toEqual([])
    const removal = await context.current.db.drizzle.select().from(auditLogs).where(and(eq(auditLogs.orgId, orgId), eq(auditLogs.action, 'member.removed')))
    expect(removal).toMatchObject([{ actorId: user.user.id, targetId: user.user.id, changes: { before: { role: 'member' }, after: null } }])
    expect(await auditActions(context.current, user.user.id)).toContain('user.deleted')
  })

  test('the only owner of an organization cannot delete the account; a co-owner can', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner, 'Solo Org')

    const refused = await gateway.send('DELETE', '/v1/auth/me', { token: owner.token, body: { password: testPassword } })
    const coOwner = await gateway.signUp()
    await context.current.db.drizzle.insert(memberships).values({ orgId, userId: coOwner.user.id, role: 'owner' })
    const allowed = await gateway.send('DELETE', '/v1/auth/me', { token: owner.token, body: { password: testPassword } })

    expect(refused.status).toBe(409)
    expect(refused.json.error.code).toBe('conflict')
    expect(refused.json.error.message).toContain(`'Solo Org' (${orgId})`)
    expect(allowed.status).toBe(200)
  })

  test('an expired session answers token_revoked with a message that says it expired', async () => {
    const email = newEmail()
    const gateway = await managementApp(context.current.db)
    await gateway.send('POST', '/v1/auth/signup', { body: { email, password } })
    const login = await gateway.send('POST', '/v1/auth/login', { body: { email, password } })
    const later = await managementApp(context.current.db, { now: () => Date.now() + (twelveHoursS + 60) * 1000 })

    const me = await later.send('GET', '/v1/auth/me', { token: login.json.access_token })

    expect(me.status).toBe(401)
    expect(me.json.error.code).toBe('token_revoked')
    expect(me.json.error.message).toContain('expired')
  })

  test("sessions are listed newest first without secrets and paged; one's own can be revoked, another user's is 404", async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const other = await gateway.signUp()
    const second = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: user.password }, headers: { 'user-agent': 'second-browser' } })

    const listed = await gateway.send('GET', '/v1/auth/sessions', { token: user.token })
    const firstPage = await gateway.send('GET', '/v1/auth/sessions?limit=1', { token: user.token })
    const secondPage = await gateway.send('GET', `/v1/auth/sessions?limit=1&after=${firstPage.json.last_id}`, { token: user.token })
    const stranger = await gateway.send('DELETE', `/v1/auth/sessions/${second.json.id}`, { token: other.token })
    const revoked = await gateway.send('DELETE', `/v1/auth/sessions/${second.json.id}`, { token: user.token })
    const revokedUse = await gateway.send('GET', '/v1/auth/me', { token: second.json.access_token })
    const remaining = await gateway.send('GET', '/v1/auth/sessions', { token: user.token })

    expect(listed.json).toMatchObject({ object: 'list', has_more: false })
    expect(listed.json.data).toHaveLength(2)
    expect(listed.json.data[0]).toEqual({ object: 'session', id: second.json.id, ip_address: null, user_agent: 'second-browser', created_at: expect.any(Number), expires_at: second.json.expires_at, current: false })
    expect(listed.json.data[1]).toMatchObject({ current: true })
    expect(listed.text).not.toContain('token')
    expect(firstPage.json).toMatchObject({ has_more: true, first_id: second.json.id, last_id: second.json.id })
    expect(secondPage.json).toMatchObject({ has_more: false, data: [{ id: listed.json.data[1].id }] })
    expect(stranger.status).toBe(404)
    expect(stranger.json.error.code).toBe('not_found')
    expect(revoked.json).toEqual({ object: 'session.revoked', id: second.json.id, revoked: true })
    expect(revokedUse.json.error.code).toBe('token_revoked')
    expect(remaining.json.data.map((session: { id: string }) => session.id)).toEqual([listed.json.data[1].id])
  })

  test('a session token on POST /v1/chat/completions answers 401 invalid_token_type', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()

    const response = await gateway.send('POST', '/v1/chat/completions', { token: user.token, body: { model: 'any', messages: [{ role: 'user', content: 'Hi' }] } })

    expect(response.status).toBe(401)
    expect(response.json.error.code).toBe('invalid_token_type')
  })
})
