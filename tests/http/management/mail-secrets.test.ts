import { expect, test } from 'bun:test'
import { inArray } from 'drizzle-orm'
import { OutboxMailer } from '../../../server/adapters/mail/outbox-mailer'
import { mailOutbox } from '../../../server/adapters/postgres/schema'
import { randomBase62 } from '../../../server/core/api-keys'
import { redactionMarker, type MailMessage } from '../../../server/core/mail'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'

const password = 'a long enough password'

/** Every run of characters a token could be made of, long enough to be one (prefix included or not). */
function tokenCandidates(text: string): string[] {
  return [...new Set(text.match(/[0-9A-Za-z_]{20,}/g) ?? [])]
}

describeEachDatabase('secrets in the mail outbox', (context) => {
  test('no row of mail_outbox, sent or not, holds a verification or invite token that works; the delivered mails do', async () => {
    const delivered: MailMessage[] = []
    const mailer = new OutboxMailer(context.current.db.governance.accounts, { deliver: async (message) => void delivered.push(message) })
    const gateway = await managementApp(context.current.db, { mailer })
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner, 'Acme')
    const newcomer = `new-${randomBase62(8).toLowerCase()}@example.test`
    const invitee = await gateway.signUp()
    expect((await gateway.send('POST', '/v1/auth/signup', { body: { email: newcomer, password } })).status).toBe(201)
    expect((await gateway.send('POST', '/v1/organization/invites', { token: owner.token, headers: { 'openai-organization': orgId }, body: { email: invitee.email, role: 'member' } })).status).toBe(201)
    await mailer.idle()

    const rows = await context.current.db.drizzle.select().from(mailOutbox).where(inArray(mailOutbox.toAddress, [newcomer, invitee.email]))
    const candidates = rows.flatMap((row) => tokenCandidates(row.body))
    const verifiedWith = await Promise.all(candidates.map((token) => gateway.send('POST', '/v1/auth/verify_email', { body: { token } })))
    const acceptedWith = await Promise.all(candidates.map((token) => gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token } })))

    expect(rows).toHaveLength(2)
    expect(rows.map((row) => ({ sent: row.sentAt !== null, redacted: row.body.includes(redactionMarker) }))).toEqual([
      { sent: true, redacted: true },
      { sent: true, redacted: true },
    ])
    for (const message of delivered) for (const secret of message.secrets) expect(rows.some((row) => row.body.includes(secret))).toBe(false)
    expect(verifiedWith.filter((response) => response.status === 200)).toEqual([])
    expect(acceptedWith.filter((response) => response.status === 200)).toEqual([])
    const [verificationToken] = delivered.find((message) => message.to === newcomer)!.secrets
    const [inviteToken] = delivered.find((message) => message.to === invitee.email)!.secrets
    expect((await gateway.send('POST', '/v1/auth/verify_email', { body: { token: verificationToken } })).status).toBe(200)
    expect((await gateway.send('POST', '/v1/invites/accept', { token: invitee.token, body: { token: inviteToken } })).status).toBe(200)
  })
})
