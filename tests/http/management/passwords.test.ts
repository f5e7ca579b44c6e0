import { expect, test } from 'bun:test'
import { and, eq, inArray } from 'drizzle-orm'
import { OutboxMailer } from '../../../server/adapters/mail/outbox-mailer'
import { auditLogs, mailOutbox } from '../../../server/adapters/postgres/schema'
import { randomBase62 } from '../../../server/core/api-keys'
import { InProcessLoginLimiter } from '../../../server/core/login-limiter'
import type { MailMessage } from '../../../server/core/mail'
import { describeEachDatabase, type TestDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'
import { waitFor } from '../../support/wait-for'

const newPassword = 'a brand new passphrase'

function newEmail(): string {
  return `user-${randomBase62(10).toLowerCase()}@example.test`
}

/** The reset token of the latest mail to `to`, once it has arrived. */
async function resetToken(mail: MailMessage[], to: string): Promise<string> {
  let token: string | undefined
  await waitFor(() => (token = mail.findLast((message) => message.to === to)?.text.match(/ngr_[0-9A-Za-z]{48}/)?.[0]) !== undefined, { what: `a reset mail to ${to}` })
  return token!
}

async function auditRows(database: TestDatabase, action: string, targetId: string) {
  return database.db.drizzle.select().from(auditLogs).where(and(eq(auditLogs.action, action), eq(auditLogs.targetId, targetId)))
}

describeEachDatabase('passwords: change, reset by mail', (context) => {
  test('a change needs the current password, ends the other sessions only, and is audited in the organizations of the user', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const orgId = await gateway.createOrganization(user)
    const other = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: user.password } })

    const wrong = await gateway.send('POST', '/v1/auth/password', { token: user.token, body: { current_password: 'not it', new_password: newPassword } })
    const short = await gateway.send('POST', '/v1/auth/password', { token: user.token, body: { current_password: user.password, new_password: 'short' } })
    const changed = await gateway.send('POST', '/v1/auth/password', { token: user.token, body: { current_password: user.password, new_password: newPassword } })
    const current = await gateway.send('GET', '/v1/auth/me', { token: user.token })
    const ended = await gateway.send('GET', '/v1/auth/me', { token: other.json.access_token })
    const oldLogin = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: user.password } })
    const newLogin = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: newPassword } })

    expect(wrong.status).toBe(401)
    expect(wrong.json.error).toMatchObject({ code: 'invalid_credentials', param: 'current_password' })
    expect(short.status).toBe(400)
    expect(short.json.error).toMatchObject({ code: 'invalid_request', param: 'new_password' })
    expect(changed.status).toBe(200)
    expect(changed.json).toEqual({ object: 'password_change', user_id: user.user.id, sessions_revoked: 1 })
    expect(current.status).toBe(200)
    expect(ended.json.error.code).toBe('token_revoked')
    expect(oldLogin.json.error.code).toBe('invalid_credentials')
    expect(newLogin.status).toBe(200)
    const audited = await auditRows(context.current, 'password.changed', user.user.id)
    expect(audited.map((row) => row.orgId).sort()).toEqual([orgId, null].sort())
    expect(audited[0]).toMatchObject({ actorId: user.user.id, changes: { before: null, after: { sessions_revoked: 1 } } })
  })

  test('wrong current passwords count as failed logins: over the limit the change answers 429, even with the right one', async () => {
    const gateway = await managementApp(context.current.db, { loginLimiter: new InProcessLoginLimiter({ failuresPerAccountAndIp: 2, windowMs: 60_000 }, () => 0) })
    const user = await gateway.signUp()
    const change = (current: string) => gateway.send('POST', '/v1/auth/password', { token: user.token, body: { current_password: current, new_password: newPassword } })

    const statuses = [(await change('guess 1')).status, (await change('guess 2')).status]
    const locked = await change(user.password)

    expect(statuses).toEqual([401, 401])
    expect(locked.status).toBe(429)
    expect(locked.json.error.code).toBe('rate_limit_exceeded')
  })

  test('a reset request answers the same for an address with an account and one without; only the account gets a mail with the dashboard link', async () => {
    const gateway = await managementApp(context.current.db)
    const server = gateway.listen()
    try {
      const user = await gateway.signUp()
      const orgId = await gateway.createOrganization(user)
      const stranger = newEmail()
      const ask = (email: string) => fetch(`${server.url}/v1/auth/password_reset`, { method: 'POST', headers: { 'content-type': 'application/json', host: 'evil.example' }, body: JSON.stringify({ email }) })

      const known = await ask(user.email.toUpperCase())
      const unknown = await ask(stranger)
      const token = await resetToken(gateway.mail, user.email)

      const [knownBody, unknownBody] = [(await known.json()) as any, (await unknown.json()) as any]
      expect([known.status, unknown.status]).toEqual([202, 202])
      expect(knownBody).toEqual({ object: 'password_reset', email: user.email, expires_at: expect.any(Number) })
      expect({ ...unknownBody, email: user.email, expires_at: knownBody.expires_at }).toEqual(knownBody)
      expect(Math.abs(knownBody.expires_at - (Date.now() / 1000 + 3600))).toBeLessThan(60)
      const message = gateway.mail.find((candidate) => candidate.to === user.email)!
      expect(message.text).toContain(`${server.url}/reset-password#token=${token}`)
      expect(message.text).toContain(`curl -X POST ${server.url}/v1/auth/password_reset/confirm`)
      expect(message.text).not.toContain('evil.example')
      expect(message.secrets).toEqual([token])
      await waitFor(async () => (await auditRows(context.current, 'password_reset.requested', 'unknown')).some((row) => row.actorEmail === stranger), { what: "the unknown address's audit record" })
      expect(gateway.mail.some((candidate) => candidate.to === stranger)).toBe(false)
      const audited = await auditRows(context.current, 'password_reset.requested', user.user.id)
      expect(audited.map((row) => row.orgId).sort()).toEqual([orgId, null].sort())
      expect(JSON.stringify(audited)).not.toContain(token)
    } finally {
      server.stop()
    }
  })

  test('the answer does not wait for the lookup or the mail, so an address with an account takes no longer', async () => {
    let release = () => {}
    const stalled = new Promise<void>((resolve) => (release = resolve))
    const sent: MailMessage[] = []
    const gateway = await managementApp(context.current.db, { mailer: { send: async (message) => { await stalled; sent.push(message) } } })
    const user = await gateway.signUp()

    const answer = await gateway.send('POST', '/v1/auth/password_reset', { body: { email: user.email } })

    expect(answer.status).toBe(202)
    expect(sent).toEqual([])
    release()
    await waitFor(() => sent.length === 1, { what: 'the reset mail' })
  })

  test('the mailed token sets a new password once, ends every session and spends the other tokens; an unknown or expired one is 400 naming token', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const orgId = await gateway.createOrganization(user)
    await gateway.send('POST', '/v1/auth/password_reset', { body: { email: user.email } })
    const first = await resetToken(gateway.mail, user.email)
    await gateway.send('POST', '/v1/auth/password_reset', { body: { email: user.email } })
    await waitFor(() => gateway.mail.filter((message) => message.to === user.email).length === 2, { what: 'the second reset mail' })
    const second = await resetToken(gateway.mail, user.email)
    const anHourLater = await managementApp(context.current.db, { now: () => Date.now() + 61 * 60 * 1000 })

    const expired = await anHourLater.send('POST', '/v1/auth/password_reset/confirm', { body: { token: first, new_password: newPassword } })
    const short = await gateway.send('POST', '/v1/auth/password_reset/confirm', { body: { token: first, new_password: 'short' } })
    const confirmed = await gateway.send('POST', '/v1/auth/password_reset/confirm', { body: { token: first, new_password: newPassword } })
    const again = await gateway.send('POST', '/v1/auth/password_reset/confirm', { body: { token: first, new_password: 'yet another passphrase' } })
    const otherToken = await gateway.send('POST', '/v1/auth/password_reset/confirm', { body: { token: second, new_password: 'yet another passphrase' } })
    const unknown = await gateway.send('POST', '/v1/auth/password_reset/confirm', { body: { token: `ngr_${randomBase62(48)}`, new_password: newPassword } })
    const session = await gateway.send('GET', '/v1/auth/me', { token: user.token })
    const login = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: newPassword } })

    expect(expired.status).toBe(400)
    expect(expired.json.error).toMatchObject({ code: 'invalid_request', param: 'token' })
    expect(short.json.error).toMatchObject({ code: 'invalid_request', param: 'new_password' })
    expect(confirmed.status).toBe(200)
    expect(confirmed.json).toEqual({ object: 'password_change', user_id: user.user.id, sessions_revoked: 1 })
    for (const refused of [again, otherToken, unknown]) expect(refused.json.error).toEqual(expired.json.error)
    expect(session.json.error.code).toBe('token_revoked')
    expect(login.status).toBe(200)
    const audited = await auditRows(context.current, 'password_reset.completed', user.user.id)
    expect(audited.map((row) => row.orgId).sort()).toEqual([orgId, null].sort())
  })

  test('reset requests are limited per address and per client IP, known address or not', async () => {
    const gateway = await managementApp(context.current.db, { loginLimiter: new InProcessLoginLimiter({ mailsPerAccount: 2, attemptsPerIp: 5, windowMs: 60_000 }, () => 0) })
    const server = gateway.listen()
    try {
      const ask = (email: string) => fetch(`${server.url}/v1/auth/password_reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) })
      const target = newEmail()

      const sameAddress = [(await ask(target)).status, (await ask(target.toUpperCase())).status]
      const thirdForAddress = await ask(target)
      const others = [(await ask(newEmail())).status, (await ask(newEmail())).status]
      const overIp = await ask(newEmail())

      expect(sameAddress).toEqual([202, 202])
      expect(thirdForAddress.status).toBe(429)
      expect(((await thirdForAddress.json()) as any).error.message).toContain('Too many mails were asked for this account')
      expect(others).toEqual([202, 202])
      expect(overIp.status).toBe(429)
      expect(((await overIp.json()) as any).error.message).toContain('Too many attempts from your address')
    } finally {
      server.stop()
    }
  })

  test('the mail outbox keeps no reset token that works; the delivered mail does', async () => {
    const delivered: MailMessage[] = []
    const mailer = new OutboxMailer(context.current.db.governance.accounts, { deliver: async (message) => void delivered.push(message) }, () => {})
    const gateway = await managementApp(context.current.db, { mailer })
    const user = await gateway.signUp()

    await gateway.send('POST', '/v1/auth/password_reset', { body: { email: user.email } })
    await waitFor(() => delivered.length === 1, { what: 'the reset mail' })
    await mailer.idle()

    const rows = await context.current.db.drizzle.select().from(mailOutbox).where(inArray(mailOutbox.toAddress, [user.email]))
    const [token] = delivered[0]!.secrets
    expect(rows).toHaveLength(1)
    expect(rows[0]!.body).not.toContain(token!)
    expect(rows[0]!.body).not.toMatch(/ngr_[0-9A-Za-z]{48}/)
    expect((await gateway.send('POST', '/v1/auth/password_reset/confirm', { body: { token, new_password: newPassword } })).status).toBe(200)
  })
})
