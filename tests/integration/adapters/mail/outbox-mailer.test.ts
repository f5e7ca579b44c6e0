import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { OutboxMailer } from '../../../../server/adapters/mail/outbox-mailer'
import { smtpTransport } from '../../../../server/adapters/mail/smtp-transport'
import { mailOutbox } from '../../../../server/adapters/postgres/schema'
import { redactionMarker, type MailMessage } from '../../../../server/core/mail'
import { describeEachDatabase, type TestDatabase } from '../../../support/databases'
import { startFakeSmtp } from '../../../support/fake-smtp'

const message: MailMessage = { to: 'ada@example.test', subject: 'Verify your e-mail address', text: 'Your token:\n\n  ngv_123\n.\nA line that starts with a dot.\n', secrets: ['ngv_123'] }
const storedText = `Your token:\n\n  ${redactionMarker}\n.\nA line that starts with a dot.\n`

async function outboxRows(database: TestDatabase) {
  return database.db.drizzle.select().from(mailOutbox).where(eq(mailOutbox.toAddress, message.to))
}

describeEachDatabase('the mail outbox', (context) => {
  test('without SMTP the message is kept in the outbox without its secrets, unsent, and printed whole', async () => {
    await context.current.db.drizzle.delete(mailOutbox)
    const printed: string[] = []
    const mailer = new OutboxMailer(context.current.db.governance.accounts, null, (line) => printed.push(line))

    await mailer.send(message)

    expect(await outboxRows(context.current)).toMatchObject([{ subject: message.subject, body: storedText, sentAt: null, error: null }])
    expect(printed).toEqual([`mail to ${message.to}: ${message.subject}\n${message.text}`])
  })

  test('over SMTP the message is delivered with the credentials of the URL and marked sent', async () => {
    await context.current.db.drizzle.delete(mailOutbox)
    const smtp = startFakeSmtp()
    const transport = smtpTransport(`smtp://mailer:s3cret@127.0.0.1:${smtp.port}`, 'nilegate <no-reply@nilegate.test>')
    try {
      const mailer = new OutboxMailer(context.current.db.governance.accounts, transport)

      await mailer.send(message)
      await mailer.idle()

      expect(smtp.received).toHaveLength(1)
      const [mail] = smtp.received
      expect(mail).toMatchObject({ from: 'no-reply@nilegate.test', to: [message.to], auth: { user: 'mailer', pass: 's3cret' } })
      expect(mail!.data).toContain(`Subject: ${message.subject}`)
      expect(mail!.data).toContain('To: ada@example.test')
      expect(mail!.data).toContain('\r\n.\r\nA line that starts with a dot.')
      expect(mail!.data).toContain('ngv_123')
      const [row] = await outboxRows(context.current)
      expect(row).toMatchObject({ body: storedText, sentAt: expect.any(Date), error: null })
    } finally {
      transport.close()
      smtp.stop()
    }
  })

  test('tokens that mail kept from before are cut out of the outbox, sent or not', async () => {
    await context.current.db.drizzle.delete(mailOutbox)
    const verification = `ngv_${'a1B2'.repeat(12)}`
    const invite = `ngi_${'Z9y8'.repeat(12)}`
    await context.current.db.drizzle.insert(mailOutbox).values([
      { id: 'mail_old_sent', toAddress: message.to, subject: 'Verify', body: `Token:\n  ${verification}\nSend it.`, sentAt: new Date() },
      { id: 'mail_old_pending', toAddress: message.to, subject: 'Invite', body: `Token: ${invite} (and ${invite} again)` },
      { id: 'mail_plain', toAddress: message.to, subject: 'Hello', body: 'No token here: ngv_short.' },
    ])

    const redacted = await context.current.db.governance.accounts.redactOutboxTokens()

    const rows = await context.current.db.drizzle.select({ id: mailOutbox.id, body: mailOutbox.body }).from(mailOutbox).orderBy(mailOutbox.id)
    expect(redacted).toBe(2)
    expect(rows).toEqual([
      { id: 'mail_old_pending', body: `Token: ${redactionMarker} (and ${redactionMarker} again)` },
      { id: 'mail_old_sent', body: `Token:\n  ${redactionMarker}\nSend it.` },
      { id: 'mail_plain', body: 'No token here: ngv_short.' },
    ])
  })

  test('a refused delivery does not fail the sender; the error stays in the outbox', async () => {
    await context.current.db.drizzle.delete(mailOutbox)
    const smtp = startFakeSmtp({ refuseRecipients: true })
    const transport = smtpTransport(smtp.url, 'no-reply@nilegate.test')
    try {
      const mailer = new OutboxMailer(context.current.db.governance.accounts, transport)

      await mailer.send(message)
      await mailer.idle()

      const [row] = await outboxRows(context.current)
      expect(row!.sentAt).toBeNull()
      expect(row!.error).toContain('550')
      expect(smtp.received).toEqual([])
    } finally {
      transport.close()
      smtp.stop()
    }
  })
})
