import { GatewayError } from '@nilegate/shared/errors'
import type { LoginLimiter } from '../login-limiter'
import type { AuditActor } from './audit'
import { generateSecretToken, normalizeEmail, sessionLifetimeMs, sessionTokenPrefix, userActor, type AccountStore, type PasswordChange, type RequestSource, type UserRecord } from './accounts'

export interface LoginDeps {
  accounts: AccountStore
  limiter: LoginLimiter
  now: () => number
}

export interface NewLogin {
  sessionId: string
  /** The access token: shown once, stored only as its hash. */
  token: string
  expiresAt: Date
  user: UserRecord
}

// Unknown addresses are checked against this hash, so they take as long as a wrong password.
let dummyHash: Promise<string> | null = null

/** Whether `password` matches `hash`; with no hash, a verification that always fails in the same time. */
async function verifyPassword(password: string, hash: string | null): Promise<boolean> {
  dummyHash ??= Bun.password.hash(crypto.randomUUID(), 'argon2id')
  const matches = await Bun.password.verify(password, hash ?? (await dummyHash))
  return hash !== null && matches
}

const invalidCredentials = () => new GatewayError('invalid_credentials')

/**
 * Checks an e-mail address and password and opens a 12-hour session. Unknown addresses and wrong
 * passwords fail alike (same code, message and work); only the right password learns that the
 * account is disabled or deleted. Limited per client IP and per (address, IP) pair, slowed down per
 * address (core/login-limiter.ts); attempts are audited in each organization of the user.
 */
export async function logIn(deps: LoginDeps, input: { email: string; password: string; source: RequestSource; userAgent: string | null }): Promise<NewLogin> {
  const email = normalizeEmail(input.email)
  const attempt = await deps.limiter.admitLogin(email, input.source.ip)
  const found = await deps.accounts.findCredentials(email)
  const failed = { email, source: input.source, userAgent: input.userAgent }
  if (!(await verifyPassword(input.password, found?.passwordHash ?? null))) {
    await deps.accounts.recordFailedLogin({ ...failed, user: found?.user ?? null, reason: 'invalid_credentials' })
    throw invalidCredentials()
  }
  await attempt.succeeded()
  const { user } = found!
  if (user.deleted || user.disabled) {
    await deps.accounts.recordFailedLogin({ ...failed, user, reason: user.deleted ? 'user_deleted' : 'user_disabled' })
    throw user.deleted ? new GatewayError('user_not_found', 'This account was deleted.') : new GatewayError('user_disabled')
  }
  const { secret, hashHex } = generateSecretToken(sessionTokenPrefix)
  const expiresAt = new Date(deps.now() + sessionLifetimeMs)
  const { sessionId } = await deps.accounts.createSession({ userId: user.id, tokenHash: hashHex, expiresAt, ip: input.source.ip, userAgent: input.userAgent }, userActor(user, input.source))
  return { sessionId, token: secret, expiresAt, user }
}

/**
 * Asks a signed-in user for their password again before a destructive change; wrong answers count
 * against the address and the client IP like failed logins. `param` names the field it came in.
 */
export async function confirmPassword(deps: LoginDeps, user: UserRecord, password: string, ip: string | null, param = 'password'): Promise<void> {
  const attempt = await deps.limiter.admitLogin(user.email, ip)
  const found = await deps.accounts.findCredentials(user.email)
  if (await verifyPassword(password, found?.passwordHash ?? null)) return attempt.succeeded()
  throw new GatewayError('invalid_credentials', 'The password is not correct.', param)
}

/**
 * Changes a signed-in user's password: the current one is checked under the login limits, and
 * every other session of the user ends (a session someone else opened with the old password
 * among them); the one making the change goes on.
 */
export async function changePassword(
  deps: LoginDeps,
  input: { user: UserRecord; sessionId: string; currentPassword: string; newPassword: string; actor: AuditActor },
): Promise<PasswordChange> {
  await confirmPassword(deps, input.user, input.currentPassword, input.actor.ip, 'current_password')
  const passwordHash = await Bun.password.hash(input.newPassword, 'argon2id')
  return deps.accounts.changePassword({ userId: input.user.id, passwordHash, keepSessionId: input.sessionId }, input.actor)
}
