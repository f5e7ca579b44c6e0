/** One plain-text message to one address. */
export interface MailMessage {
  to: string
  subject: string
  text: string
  /** The one-time secrets (tokens) `text` carries: delivered to the recipient, never stored. */
  secrets: readonly string[]
}

/** A message as the mail outbox keeps it: its secrets replaced by `redactionMarker`. */
export type StoredMail = Omit<MailMessage, 'secrets'>

/** What stands in the stored copy of a mail where a secret was. */
export const redactionMarker = '[one-time token: sent only to the recipient, not kept]'

/**
 * The message with every secret cut out of its text. The outbox keeps only this: tokens are stored
 * hashed in their own tables, so the outbox must not hold a usable copy either.
 */
export function redactSecrets(message: MailMessage): StoredMail {
  let text = message.text
  for (const secret of message.secrets) if (secret.length > 0) text = text.replaceAll(secret, redactionMarker)
  return { to: message.to, subject: message.subject, text }
}

/** Sends the gateway's mail (verification links, invitations). */
export interface Mailer {
  send(message: MailMessage): Promise<void>
}
