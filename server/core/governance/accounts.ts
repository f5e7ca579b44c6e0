import { hashApiKey, randomBase62 } from '../api-keys'
import type { AuditActor } from './audit'
import type { MembershipRole } from './roles'
import type { StoredMail } from '../mail'

/** Access tokens of dashboard sessions; distinct from API keys (`sk-`) at a glance. */
export const sessionTokenPrefix = 'ngs_'
/** DESIGN.md section 9: 12-hour access tokens. */
export const sessionLifetimeMs = 12 * 60 * 60 * 1000
/** One-time e-mail verification tokens: a prefix of their own, so one is never mistaken for a session. */
export const verificationTokenPrefix = 'ngv_'
export const verificationLifetimeMs = 24 * 60 * 60 * 1000
/** One-time password reset tokens: a prefix of their own too, and an hour to use one. */
export const passwordResetTokenPrefix = 'ngr_'
export const passwordResetLifetimeMs = 60 * 60 * 1000

export function looksLikeSessionToken(token: string): boolean {
  return token.startsWith(sessionTokenPrefix)
}

/** A new opaque secret with `prefix` and the SHA-256 hex it is stored as. */
export function generateSecretToken(prefix: string): { secret: string; hashHex: string } {
  const secret = prefix + randomBase62(48)
  return { secret, hashHex: hashApiKey(secret) }
}

/** E-mail addresses are compared and stored lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

/** A plausible address (normalized): something@domain.tld, no spaces, at most 254 characters. */
export function isEmailAddress(email: string): boolean {
  return email.length <= 254 && /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/.test(email)
}

export interface UserRecord {
  id: string
  email: string
  name: string | null
  emailVerified: boolean
  isOperator: boolean
  disabled: boolean
  deleted: boolean
  /** Unix seconds. */
  createdAt: number
}

/** A session found by its token hash, with its user. */
export interface SessionLookup {
  sessionId: string
  /** Unix milliseconds. */
  expiresAt: number
  revokedAt: number | null
  user: UserRecord
}

export interface NewUser {
  email: string
  name: string | null
  passwordHash: string
  emailVerified: boolean
}

export interface NewSession {
  userId: string
  tokenHash: string
  expiresAt: Date
  ip: string | null
  userAgent: string | null
}

/** What login checks a password against; deleted and disabled users are found too. */
export interface UserCredentials {
  user: UserRecord
  passwordHash: string
}

/** How audit records name a user acting from `source`. */
export function userActor(user: UserRecord, source: RequestSource): AuditActor {
  return { type: user.isOperator ? 'operator' : 'user', id: user.id, email: user.email, ip: source.ip, requestId: source.requestId }
}

/** An active session as its user sees it: never the token or its hash. */
export interface SessionRecord {
  id: string
  ip: string | null
  userAgent: string | null
  /** Unix seconds. */
  createdAt: number
  expiresAt: number
}

/** An organization the user belongs to, with the user's role there. */
export interface UserOrganization {
  id: string
  name: string
  role: MembershipRole
}

/** Where a request without a signed-in user came from: for the audit records it leaves. */
export type RequestSource = Pick<AuditActor, 'ip' | 'requestId'>

/** A login refused after its password was checked: why, for whom, and from where. */
export interface FailedLogin {
  email: string
  user: UserRecord | null
  reason: 'invalid_credentials' | 'user_disabled' | 'user_deleted'
  source: RequestSource
  userAgent: string | null
}

/** A password set: whose, and how many of their sessions it ended. */
export interface PasswordChange {
  user: UserRecord
  sessionsRevoked: number
}

export interface AccountStore {
  /**
   * Throws 409 conflict when the e-mail address is taken. `actor` is who created the account; for
   * a user signing up, where the request came from (or null), and the new user is the actor.
   */
  createUser(user: NewUser, actor: AuditActor | RequestSource | null): Promise<UserRecord>
  /** Opens a session, audited `login.succeeded` on the platform and in each organization of the user. */
  createSession(session: NewSession, actor: AuditActor): Promise<{ sessionId: string }>
  findSessionByTokenHash(tokenHash: string): Promise<SessionLookup | null>
  /** The user with this (normalized) e-mail address and their password hash, whatever their state. */
  findCredentials(email: string): Promise<UserCredentials | null>
  /**
   * Audits `login.failed` on the platform and in each organization of `user` (null when no account
   * has the address). Never given the password.
   */
  recordFailedLogin(attempt: FailedLogin): Promise<void>
  /** Stores a one-time verification token (its hash) for the user's e-mail address. */
  createEmailVerification(input: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void>
  /**
   * Spends a verification token and marks the address verified (audited `user.email_verified`);
   * null when the token is unknown, used or expired at `now`, or its user was deleted.
   */
  verifyEmail(tokenHash: string, now: Date, source: RequestSource): Promise<UserRecord | null>
  /**
   * Records that a password reset was asked for `email`: audited `password_reset.requested` on the
   * platform and in each organization of `user` (null when no account has the address), with the
   * token's hash stored when there is a `reset` to mail.
   */
  recordPasswordResetRequest(input: { email: string; user: UserRecord | null; reset: { tokenHash: string; expiresAt: Date } | null; source: RequestSource }): Promise<void>
  /**
   * Spends a reset token: sets the password hash, ends every session of its user and spends the
   * user's other reset tokens (audited `password_reset.completed`); null when the token is unknown,
   * used or expired at `now`, or its user was deleted.
   */
  resetPassword(input: { tokenHash: string; passwordHash: string; now: Date; source: RequestSource }): Promise<PasswordChange | null>
  /**
   * Sets a signed-in user's password hash, ends their other sessions (all but `keepSessionId`) and
   * spends their reset tokens (audited `password.changed`).
   */
  changePassword(input: { userId: string; passwordHash: string; keepSessionId: string }, actor: AuditActor): Promise<PasswordChange>
  /** The user's sessions neither revoked nor expired at `now`, newest first, after the session `after`. */
  listActiveSessions(query: { userId: string; now: Date; after?: string; limit: number }): Promise<{ sessions: SessionRecord[]; hasMore: boolean }>
  /**
   * Revokes one of the user's sessions that is still open, audited as `action` (`logout`, `session.revoked`);
   * false when the user has no such session.
   */
  revokeSession(input: { userId: string; sessionId: string; action: 'logout' | 'session.revoked' }, actor: AuditActor): Promise<boolean>
  /** The user's organizations, oldest membership first. */
  listUserOrganizations(userId: string): Promise<UserOrganization[]>
  /**
   * Soft-deletes the account and removes its memberships (audited `user.deleted`, and `member.removed`
   * in each organization); 409 conflict when the user is the only owner of an organization.
   */
  deleteUser(userId: string, actor: AuditActor): Promise<void>
  /** Puts a message, its secrets already cut out, in the mail outbox; returns its id. */
  enqueueMail(message: StoredMail): Promise<{ id: string }>
  /**
   * Cuts the verification and invite tokens out of the mail the outbox kept before it stopped
   * keeping them (see core/mail.ts); returns how many messages held one.
   */
  redactOutboxTokens(): Promise<number>
  /** Records the outcome of delivering an outbox message: sent now, or the error. */
  recordMailDelivery(id: string, outcome: { error: string | null }): Promise<void>
}
