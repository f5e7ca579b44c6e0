import type { AccountStore } from '../../core/governance/accounts'
import { redactSecrets, type MailMessage, type Mailer } from '../../core/mail'

/** Hands one message to a mail server; throws when it is refused or cannot be reached. */
export interface MailTransport {
  deliver(message: MailMessage): Promise<void>
}

export type MailOutbox = Pick<AccountStore, 'enqueueMail' | 'recordMailDelivery'>

/**
 * Keeps every message in the mail outbox table, then delivers it through `transport` in the
 * background and records `sent_at` or the error there. A delivery failure is logged and stays in
 * the outbox; it never fails the request that sent the mail. Without a transport (no SMTP_URL) the
 * message is printed instead, so a local gateway works without a mail server.
 *
 * The outbox is a record, not a queue: delivery sends the message held in memory, so the table
 * keeps it with its secrets (verification and invite tokens) cut out, and someone who reads the
 * database finds no token to spend. A mail that was not delivered is not sent again from there;
 * its user asks for a new one (POST /v1/auth/verify_email/resend, or a new invite).
 */
export class OutboxMailer implements Mailer {
  private readonly deliveries = new Set<Promise<void>>()

  constructor(
    private readonly outbox: MailOutbox,
    private readonly transport: MailTransport | null,
    private readonly log: (line: string) => void = console.log,
  ) {}

  async send(message: MailMessage): Promise<void> {
    const { id } = await this.outbox.enqueueMail(redactSecrets(message))
    if (!this.transport) {
      this.log(`mail to ${message.to}: ${message.subject}\n${message.text}`)
      return
    }
    const delivery = this.deliver(id, message, this.transport).finally(() => this.deliveries.delete(delivery))
    this.deliveries.add(delivery)
  }

  /** Resolves when every delivery started so far has finished: before shutting down. */
  async idle(): Promise<void> {
    await Promise.all(this.deliveries)
  }

  private async deliver(id: string, message: MailMessage, transport: MailTransport): Promise<void> {
    let error: string | null = null
    try {
      await transport.deliver(message)
    } catch (cause) {
      error = cause instanceof Error ? cause.message : String(cause)
      console.error(`mail ${id} to ${message.to} was not delivered: ${error}`)
    }
    await this.outbox.recordMailDelivery(id, { error }).catch((cause: unknown) => console.error(`recording the delivery of mail ${id} failed`, cause))
  }
}
