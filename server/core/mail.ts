/** One plain-text message to one address. */
export interface MailMessage {
  to: string
  subject: string
  text: string
}

/** Sends the gateway's mail (verification links, invitations). */
export interface Mailer {
  send(message: MailMessage): Promise<void>
}
