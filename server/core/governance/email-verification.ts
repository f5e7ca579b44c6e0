import type { MailMessage, Mailer } from '../mail'
import { generateSecretToken, verificationLifetimeMs, verificationTokenPrefix, type AccountStore, type UserRecord } from './accounts'

export interface VerificationDeps {
  accounts: AccountStore
  mailer: Mailer
  now: () => number
  /** Where the API is reached (`https://api.example.com/v1`): the mail then shows the full request. */
  publicBaseUrl: string | null
}

/** The mail that carries a verification token, with the request that spends it. */
export function verificationMail(to: string, token: string, publicBaseUrl: string | null): MailMessage {
  const body = JSON.stringify({ token })
  const how = publicBaseUrl
    ? `curl -X POST ${publicBaseUrl.replace(/\/+$/, '')}/auth/verify_email -H 'Content-Type: application/json' -d '${body}'`
    : `POST /v1/auth/verify_email with the body ${body}`
  return {
    to,
    subject: 'Verify your e-mail address for nilegate',
    text: `Confirm that ${to} is your address with this one-time token, valid for 24 hours:\n\n  ${token}\n\nSend it with:\n\n  ${how}\n\nIf you did not sign up, ignore this message.\n`,
    secrets: [token],
  }
}

/**
 * Issues a one-time verification token (stored as its hash, valid 24 hours) and mails it. A mail
 * that cannot be queued is logged, not thrown: the account exists either way, and the user can ask
 * for another mail.
 */
export async function sendVerificationMail(deps: VerificationDeps, user: Pick<UserRecord, 'id' | 'email'>): Promise<{ expiresAt: Date }> {
  const { secret, hashHex } = generateSecretToken(verificationTokenPrefix)
  const expiresAt = new Date(deps.now() + verificationLifetimeMs)
  await deps.accounts.createEmailVerification({ userId: user.id, tokenHash: hashHex, expiresAt })
  await deps.mailer.send(verificationMail(user.email, secret, deps.publicBaseUrl)).catch((error: unknown) => console.error(`the verification mail to ${user.email} could not be queued`, error))
  return { expiresAt }
}
