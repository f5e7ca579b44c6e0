import { GatewayError } from '@nilegate/shared/errors'
import { eq } from 'drizzle-orm'
import { newId } from '../../../core/api-keys'
import { normalizeEmail, type AccountStore, type UserRecord } from '../../../core/governance/accounts'
import type { Drizzle } from '../drizzle'
import { sessions, users } from '../schema'
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
          await appendAudit(tx, actor ?? { type: 'user', id, email, ip: null, requestId: null }, { orgId: null, action: 'user.created', targetType: 'user', targetId: id, after: { email, name: user.name } })
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
        await appendAudit(tx, actor, { orgId: null, action: 'login.succeeded', targetType: 'session', targetId: id })
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
  }
}
