import { GatewayError } from '@nilegate/shared/errors'
import { hashApiKey } from '../api-keys'
import type { LoginLimiter } from '../login-limiter'
import type { MailMessage, Mailer } from '../mail'
import { generateSecretToken, isEmailAddress, normalizeEmail, passwordResetLifetimeMs, passwordResetTokenPrefix, type AccountStore, type PasswordChange, type RequestSource } from './accounts'
import { apiRequestLine, dashboardLink } from './mail-links'

export interface PasswordResetDeps {
  accounts: AccountStore
  limiter: LoginLimiter
  mailer: Mailer
  now: () => number
  log?: (message: string, error: unknown) => void
}

/** The mail that carries a password reset token: the dashboard page that spends it, and the request that does. */
export function passwordResetMail(to: string, token: string, baseUrl: string | null): MailMessage {
  const link = dashboardLink(baseUrl, '/reset-password', token)
  const how = apiRequestLine(baseUrl, '/auth/password_reset/confirm', JSON.stringify({ token, new_password: '<your new password>' }))
  return {
    to,
    subject: 'Reset your nilegate password',
    text:
      `Someone asked to reset the password of the nilegate account ${to}. Choose a new one by opening this link within an hour:\n\n  ${link}\n\n` +
      `Or send the one-time token yourself:\n\n  ${how}\n\n` +
      'Every session of the account ends when the password changes. If you did not ask for this, ignore this message: your password stays as it is.\n',
    secrets: [token],
  }
}

/** The answer to a reset request, the same whether or not an account has the address. */
export interface ResetRequested {
  email: string
  /** When a token mailed now stops working. */
  expiresAt: Date
  /** The lookup, the token and the mail, which the answer does not wait for (tests do). */
  issued: Promise<void>
}

/**
 * Asks for a password reset mail to `email`: limited per client IP (with sign-ups and failed logins)
 * and per address (like verification mails), so nobody floods an inbox or guesses at volume. The
 * answer is decided before the address is looked up and does not wait for the lookup, the token or
 * the mail: an address with an account and one without get the same answer in the same time. The
 * token (an hour) is stored hashed; the request is audited either way.
 */
export async function requestPasswordReset(deps: PasswordResetDeps, input: { email: string; source: RequestSource; baseUrl: string | null }): Promise<ResetRequested> {
  const email = normalizeEmail(input.email)
  if (!isEmailAddress(email)) throw new GatewayError('invalid_request', `'${input.email}' is not an e-mail address.`, 'email')
  await deps.limiter.admitAttempt(input.source.ip)
  await deps.limiter.admitMail(`password_reset:${email}`)
  const expiresAt = new Date(deps.now() + passwordResetLifetimeMs)
  const issued = issueReset(deps, email, expiresAt, input).catch((error: unknown) => (deps.log ?? console.error)(`the password reset for ${email} could not be issued`, error))
  return { email, expiresAt, issued }
}

async function issueReset(deps: PasswordResetDeps, email: string, expiresAt: Date, input: { source: RequestSource; baseUrl: string | null }): Promise<void> {
  const found = await deps.accounts.findCredentials(email)
  // A disabled account gets no mail: it could not log in with the new password either.
  const user = found && !found.user.deleted ? found.user : null
  if (!user || user.disabled) {
    await deps.accounts.recordPasswordResetRequest({ email, user, reset: null, source: input.source })
    return
  }
  const { secret, hashHex } = generateSecretToken(passwordResetTokenPrefix)
  await deps.accounts.recordPasswordResetRequest({ email, user, reset: { tokenHash: hashHex, expiresAt }, source: input.source })
  await deps.mailer.send(passwordResetMail(user.email, secret, input.baseUrl))
}

/**
 * Sets a new password with a mailed reset token, and ends every session of the account: whoever
 * held one may be who the reset locks out. Limited per client IP like verifications; an unknown,
 * used or expired token is 400 naming `token`.
 */
export async function confirmPasswordReset(deps: PasswordResetDeps, input: { token: string; newPassword: string; source: RequestSource }): Promise<PasswordChange> {
  await deps.limiter.admitAttempt(input.source.ip)
  // Argon2 is slow on purpose: hash before the transaction, not inside it.
  const passwordHash = await Bun.password.hash(input.newPassword, 'argon2id')
  const changed = await deps.accounts.resetPassword({ tokenHash: hashApiKey(input.token), passwordHash, now: new Date(deps.now()), source: input.source })
  if (!changed) throw new GatewayError('invalid_request', 'The password reset token is unknown, already used or expired; ask for a new one with POST /v1/auth/password_reset.', 'token')
  return changed
}
