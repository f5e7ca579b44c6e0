import { GatewayError } from '@nilegate/shared/errors'
import { and, asc, desc, eq, gt, inArray, isNull, ne, sql } from 'drizzle-orm'
import { newId } from '../../../core/api-keys'
import { normalizeEmail, passwordResetTokenPrefix, userActor, verificationTokenPrefix, type AccountStore, type UserRecord } from '../../../core/governance/accounts'
import { inviteTokenPrefix } from '../../../core/governance/organizations'
import { redactionMarker } from '../../../core/mail'
import type { AuditActor, AuditEntry } from '../../../core/governance/audit'
import type { Drizzle } from '../drizzle'
import { emailVerifications, mailOutbox, memberships, organizations, passwordResets, sessions, users } from '../schema'
import { appendAudit, isUniqueViolation, unixSeconds } from './common'

type UserRow = typeof users.$inferSelect

export function toUserRecord(row: UserRow): UserRecord {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    emailVerified: row.emailVerifiedAt !== null,
    isOperator: row.isOperator,
    disabled: row.disabledAt !== null,
    deleted: row.deletedAt !== null,
    createdAt: unixSeconds(row.createdAt),
  }
}

/**
 * 409 unless every organization `userId` owns has another owner. Locks those organizations first
 * (in id order), so two co-owners deleting their accounts at once cannot both pass.
 */
async function refuseSoleOwnership(tx: Drizzle, userId: string): Promise<void> {
  const owned = await tx
    .select({ id: organizations.id, name: organizations.name })
    .from(organizations)
    .innerJoin(memberships, and(eq(memberships.orgId, organizations.id), eq(memberships.userId, userId), eq(memberships.role, 'owner')))
    .orderBy(asc(organizations.id))
    .for('update', { of: organizations })
  if (owned.length === 0) return
  const coOwned = await tx
    .selectDistinct({ orgId: memberships.orgId })
    .from(memberships)
    .where(and(inArray(memberships.orgId, owned.map((org) => org.id)), eq(memberships.role, 'owner'), ne(memberships.userId, userId)))
  const sole = owned.filter((org) => !coOwned.some((row) => row.orgId === org.id))
  if (sole.length === 0) return
  const names = sole.map((org) => `'${org.name}' (${org.id})`).join(', ')
  throw new GatewayError('conflict', `You are the only owner of ${names}; make another member an owner, or delete the organization, before deleting your account.`)
}

/**
 * Audits a login (or a failed one) on the platform and in every organization `userId` belongs to,
 * so each organization's owners and admins see their members' logins, and no one else's.
 */
async function appendLoginAudit(tx: Drizzle, actor: AuditActor, userId: string | null, entry: Omit<AuditEntry, 'orgId' | 'before'>): Promise<void> {
  const login = { ...entry, before: null }
  await appendAudit(tx, actor, { orgId: null, ...login })
  if (userId === null) return
  const memberOf = await tx.select({ orgId: memberships.orgId }).from(memberships).where(eq(memberships.userId, userId)).orderBy(asc(memberships.orgId))
  for (const { orgId } of memberOf) await appendAudit(tx, actor, { orgId, ...login })
}

/**
 * Sets a user's password hash, spends their unused reset tokens and ends their open sessions but
 * `keepSessionId`; returns how many sessions ended.
 */
async function replacePassword(tx: Drizzle, userId: string, passwordHash: string, now: Date, keepSessionId: string | null): Promise<number> {
  await tx.update(users).set({ passwordHash }).where(eq(users.id, userId))
  await tx.update(passwordResets).set({ usedAt: now }).where(and(eq(passwordResets.userId, userId), isNull(passwordResets.usedAt)))
  const open = [eq(sessions.userId, userId), isNull(sessions.revokedAt)]
  if (keepSessionId !== null) open.push(ne(sessions.id, keepSessionId))
  const ended = await tx.update(sessions).set({ revokedAt: now }).where(and(...open)).returning({ id: sessions.id })
  return ended.length
}

export function createAccountRepository(db: Drizzle): AccountStore {
  return {
    async createUser(user, actor) {
      const id = newId('user')
      const email = normalizeEmail(user.email)
      try {
        return await db.transaction(async (tx) => {
          const [row] = await tx
            .insert(users)
            .values({ id, email, name: user.name, passwordHash: user.passwordHash, emailVerifiedAt: user.emailVerified ? new Date() : null })
            .returning()
          const creator = actor && 'type' in actor ? actor : { type: 'user' as const, id, email, ip: actor?.ip ?? null, requestId: actor?.requestId ?? null }
          await appendAudit(tx, creator, { orgId: null, action: 'user.created', targetType: 'user', targetId: id, after: { email, name: user.name } })
          return toUserRecord(row!)
        })
      } catch (error) {
        if (isUniqueViolation(error)) throw new GatewayError('conflict', 'An account with this e-mail address already exists.', 'email')
        throw error
      }
    },

    async createSession(session, actor) {
      const id = newId('sess')
      await db.transaction(async (tx) => {
        await tx.insert(sessions).values({ id, ...session })
        await appendLoginAudit(tx, actor, session.userId, { action: 'login.succeeded', targetType: 'session', targetId: id, after: { user_agent: session.userAgent } })
      })
      return { sessionId: id }
    },

    async findSessionByTokenHash(tokenHash) {
      const [row] = await db.select().from(sessions).innerJoin(users, eq(users.id, sessions.userId)).where(eq(sessions.tokenHash, tokenHash)).limit(1)
      if (!row) return null
      return {
        sessionId: row.sessions.id,
        expiresAt: row.sessions.expiresAt.getTime(),
        revokedAt: row.sessions.revokedAt?.getTime() ?? null,
        user: toUserRecord(row.users),
      }
    },

    async findCredentials(email) {
      const [row] = await db.select().from(users).where(eq(users.email, normalizeEmail(email))).limit(1)
      return row ? { user: toUserRecord(row), passwordHash: row.passwordHash } : null
    },

    async recordFailedLogin({ email, user, reason, source, userAgent }) {
      const actor = user ? userActor(user, source) : { type: 'user' as const, id: 'unknown', email: normalizeEmail(email), ...source }
      const entry = { action: 'login.failed', targetType: 'user', targetId: user?.id ?? 'unknown', after: { reason, user_agent: userAgent } }
      await db.transaction((tx) => appendLoginAudit(tx, actor, user?.id ?? null, entry))
    },

    async createEmailVerification(input) {
      await db.insert(emailVerifications).values(input)
    },

    async verifyEmail(tokenHash, now, source) {
      return db.transaction(async (tx) => {
        const [spent] = await tx
          .update(emailVerifications)
          .set({ usedAt: now })
          .where(and(eq(emailVerifications.tokenHash, tokenHash), isNull(emailVerifications.usedAt), gt(emailVerifications.expiresAt, now)))
          .returning({ userId: emailVerifications.userId })
        if (!spent) return null
        const [current] = await tx.select().from(users).where(eq(users.id, spent.userId)).for('update')
        if (!current || current.deletedAt !== null) return null
        if (current.emailVerifiedAt !== null) return toUserRecord(current)
        const [row] = await tx.update(users).set({ emailVerifiedAt: now }).where(eq(users.id, current.id)).returning()
        const user = toUserRecord(row!)
        await appendAudit(tx, userActor(user, source), { orgId: null, action: 'user.email_verified', targetType: 'user', targetId: user.id, before: { email_verified: false }, after: { email_verified: true } })
        return user
      })
    },

    async recordPasswordResetRequest({ email, user, reset, source }) {
      const actor = user ? userActor(user, source) : { type: 'user' as const, id: 'unknown', email: normalizeEmail(email), ...source }
      await db.transaction(async (tx) => {
        if (user && reset) await tx.insert(passwordResets).values({ userId: user.id, ...reset })
        // No token hash, nor whether a mail went out: the owners of the user's organizations read this.
        await appendLoginAudit(tx, actor, user?.id ?? null, { action: 'password_reset.requested', targetType: 'user', targetId: user?.id ?? 'unknown' })
      })
    },

    async resetPassword({ tokenHash, passwordHash, now, source }) {
      return db.transaction(async (tx) => {
        const [spent] = await tx
          .update(passwordResets)
          .set({ usedAt: now })
          .where(and(eq(passwordResets.tokenHash, tokenHash), isNull(passwordResets.usedAt), gt(passwordResets.expiresAt, now)))
          .returning({ userId: passwordResets.userId })
        if (!spent) return null
        const [current] = await tx.select().from(users).where(eq(users.id, spent.userId)).for('update')
        if (!current || current.deletedAt !== null) return null
        const user = toUserRecord(current)
        const sessionsRevoked = await replacePassword(tx, user.id, passwordHash, now, null)
        await appendLoginAudit(tx, userActor(user, source), user.id, { action: 'password_reset.completed', targetType: 'user', targetId: user.id, after: { sessions_revoked: sessionsRevoked } })
        return { user, sessionsRevoked }
      })
    },

    async changePassword({ userId, passwordHash, keepSessionId }, actor) {
      return db.transaction(async (tx) => {
        const [current] = await tx.select().from(users).where(eq(users.id, userId)).for('update')
        if (!current || current.deletedAt !== null) throw new GatewayError('user_not_found')
        const sessionsRevoked = await replacePassword(tx, userId, passwordHash, new Date(), keepSessionId)
        await appendLoginAudit(tx, actor, userId, { action: 'password.changed', targetType: 'user', targetId: userId, after: { sessions_revoked: sessionsRevoked } })
        return { user: toUserRecord(current), sessionsRevoked }
      })
    },

    async listActiveSessions({ userId, now, after, limit }) {
      const conditions = [eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.expiresAt, now)]
      if (after !== undefined) {
        // Newest first: the page continues below the cursor session; an unknown cursor matches nothing.
        conditions.push(sql`(${sessions.createdAt}, ${sessions.id}) < (select cursor.created_at, cursor.id from sessions cursor where cursor.id = ${after} and cursor.user_id = ${userId})`)
      }
      const rows = await db
        .select()
        .from(sessions)
        .where(and(...conditions))
        .orderBy(desc(sessions.createdAt), desc(sessions.id))
        .limit(limit + 1)
      return {
        sessions: rows.slice(0, limit).map((row) => ({ id: row.id, ip: row.ip, userAgent: row.userAgent, createdAt: unixSeconds(row.createdAt), expiresAt: unixSeconds(row.expiresAt) })),
        hasMore: rows.length > limit,
      }
    },

    async revokeSession({ userId, sessionId, action }, actor) {
      return db.transaction(async (tx) => {
        const revoked = await tx
          .update(sessions)
          .set({ revokedAt: new Date() })
          .where(and(eq(sessions.id, sessionId), eq(sessions.userId, userId), isNull(sessions.revokedAt)))
          .returning({ id: sessions.id })
        if (revoked.length === 0) return false
        await appendAudit(tx, actor, { orgId: null, action, targetType: 'session', targetId: sessionId })
        return true
      })
    },

    async listUserOrganizations(userId) {
      return db
        .select({ id: organizations.id, name: organizations.name, role: memberships.role })
        .from(memberships)
        .innerJoin(organizations, eq(organizations.id, memberships.orgId))
        .where(eq(memberships.userId, userId))
        .orderBy(asc(memberships.createdAt), asc(memberships.orgId))
    },

    async deleteUser(userId, actor) {
      await db.transaction(async (tx) => {
        await refuseSoleOwnership(tx, userId)
        const removed = await tx.delete(memberships).where(eq(memberships.userId, userId)).returning({ orgId: memberships.orgId, role: memberships.role })
        await tx.update(users).set({ deletedAt: new Date() }).where(eq(users.id, userId))
        await appendAudit(tx, actor, { orgId: null, action: 'user.deleted', targetType: 'user', targetId: userId, before: { deleted: false }, after: { deleted: true } })
        for (const membership of removed) {
          await appendAudit(tx, actor, { orgId: membership.orgId, action: 'member.removed', targetType: 'user', targetId: userId, before: { role: membership.role }, after: null })
        }
      })
    },

    async enqueueMail(message) {
      const id = newId('mail')
      await db.insert(mailOutbox).values({ id, toAddress: message.to, subject: message.subject, body: message.text })
      return { id }
    },

    async redactOutboxTokens() {
      const token = `(${verificationTokenPrefix}|${inviteTokenPrefix}|${passwordResetTokenPrefix})[0-9A-Za-z]{48}`
      const redacted = await db
        .update(mailOutbox)
        .set({ body: sql`regexp_replace(${mailOutbox.body}, ${token}, ${redactionMarker}, 'g')` })
        .where(sql`${mailOutbox.body} ~ ${token}`)
        .returning({ id: mailOutbox.id })
      return redacted.length
    },

    async recordMailDelivery(id, { error }) {
      await db
        .update(mailOutbox)
        .set(error === null ? { sentAt: new Date(), error: null } : { error })
        .where(eq(mailOutbox.id, id))
    },
  }
}
