import { hashApiKey, randomBase62 } from '../api-keys'
import type { AuditActor } from './audit'

/** Access tokens of dashboard sessions; distinct from API keys (`sk-`) at a glance. */
export const sessionTokenPrefix = 'ngs_'
/** DESIGN.md section 9: 12-hour access tokens. */
export const sessionLifetimeMs = 12 * 60 * 60 * 1000

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

export interface AccountStore {
  /** Throws 409 conflict when the e-mail address is taken. */
  createUser(user: NewUser, actor: AuditActor | null): Promise<UserRecord>
  createSession(session: NewSession, actor: AuditActor): Promise<{ sessionId: string }>
  findSessionByTokenHash(tokenHash: string): Promise<SessionLookup | null>
}
