import type { MailMessage, Mailer } from '../mail'
import { apiRequestLine, dashboardLink } from './mail-links'
import { generateSecretToken, verificationLifetimeMs, verificationTokenPrefix, type AccountStore, type UserRecord } from './accounts'

export interface VerificationDeps {
  accounts: AccountStore
  mailer: Mailer
  now: () => number
  /** PUBLIC_BASE_URL, where the API is reached (`https://api.example.com/v1`): mails link there. */
  publicBaseUrl: string | null
}

/** The mail that carries a verification token: the dashboard page that spends it, and the request that does. */
export function verificationMail(to: string, token: string, baseUrl: string | null): MailMessage {
  const link = dashboardLink(baseUrl, '/verify-email', token)
  const how = apiRequestLine(baseUrl, '/auth/verify_email', JSON.stringify({ token }))
  return {
    to,
    subject: 'Verify your e-mail address for nilegate',
    text:
      `Confirm that ${to} is your address by opening this link within 24 hours:\n\n  ${link}\n\n` +
      `Or send the one-time token yourself:\n\n  ${how}\n\nIf you did not sign up, ignore this message.\n`,
    secrets: [token],
  }
}

/**
 * Issues a one-time verification token (stored as its hash, valid 24 hours) and mails it, with
 * links under `baseUrl` (PUBLIC_BASE_URL by default). A mail that cannot be queued is logged, not
 * thrown: the account exists either way, and the user can ask for another mail.
 */
export async function sendVerificationMail(deps: VerificationDeps, user: Pick<UserRecord, 'id' | 'email'>, baseUrl: string | null = deps.publicBaseUrl): Promise<{ expiresAt: Date }> {
  const { secret, hashHex } = generateSecretToken(verificationTokenPrefix)
  const expiresAt = new Date(deps.now() + verificationLifetimeMs)
  await deps.accounts.createEmailVerification({ userId: user.id, tokenHash: hashHex, expiresAt })
  await deps.mailer.send(verificationMail(user.email, secret, baseUrl)).catch((error: unknown) => console.error(`the verification mail to ${user.email} could not be queued`, error))
  return { expiresAt }
}
