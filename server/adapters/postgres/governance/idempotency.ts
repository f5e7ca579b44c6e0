import { and, eq, isNull } from 'drizzle-orm'
import type { IdempotencyStore } from '../../../core/governance/idempotency'
import type { Drizzle } from '../drizzle'
import { idempotencyKeys } from '../schema'

export function createIdempotencyRepository(db: Drizzle): IdempotencyStore {
  const where = (scope: string, key: string) => and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key))
  return {
    async claim(scope, key, fingerprint) {
      // The insert decides, atomically, which of two concurrent first uses runs the request.
      const inserted = await db.insert(idempotencyKeys).values({ scope, key, fingerprint }).onConflictDoNothing().returning({ key: idempotencyKeys.key })
      if (inserted.length > 0) return { kind: 'claimed' }
      const [row] = await db.select().from(idempotencyKeys).where(where(scope, key)).limit(1)
      // Abandoned between the insert and this read: claim again.
      if (!row) return this.claim(scope, key, fingerprint)
      if (row.fingerprint !== fingerprint) return { kind: 'mismatch' }
      if (row.status === null) return { kind: 'in_progress' }
      return { kind: 'replay', answer: { status: row.status, body: row.body } }
    },
    async complete(scope, key, answer) {
      await db.update(idempotencyKeys).set({ status: answer.status, body: answer.body }).where(where(scope, key))
    },
    async abandon(scope, key) {
      await db.delete(idempotencyKeys).where(and(where(scope, key), isNull(idempotencyKeys.status)))
    },
  }
}
