import nodemailer from 'nodemailer'
import type { MailTransport } from './outbox-mailer'

// A mail server that does not answer must not hold a delivery for nodemailer's default minutes.
const timeoutMs = 30_000

/**
 * Delivers over SMTP to `url`: `smtp://user:pass@host:587` (STARTTLS when the server offers it)
 * or `smtps://user:pass@host:465` (TLS from the start), from the address `from`.
 */
export function smtpTransport(url: string, from: string): MailTransport & { close(): void } {
  const transporter = nodemailer.createTransport({ url, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs })
  return {
    async deliver(message) {
      await transporter.sendMail({ from, to: message.to, subject: message.subject, text: message.text })
    },
    close: () => transporter.close(),
  }
}
