import { GatewayError } from '@nilegate/shared/errors'
import { sql, type SQL } from 'drizzle-orm'
import type { AnyPgColumn, PgSelect } from 'drizzle-orm/pg-core'
import { newId } from '../../../core/api-keys'
import type { AuditActor, AuditEntry } from '../../../core/governance/audit'
import type { Page, PageQuery } from '../../../core/governance/pages'
import type { Drizzle } from '../drizzle'
import { auditLogs } from '../schema'

/**
 * Appends one audit record. Call it with the transaction of the change it describes, so the
 * record exists exactly when the change does.
 */
export async function appendAudit(tx: Drizzle, actor: AuditActor, entry: AuditEntry): Promise<void> {
  await tx.insert(auditLogs).values({
    id: newId('audit'),
    orgId: entry.orgId,
    projectId: entry.projectId ?? null,
    actorType: actor.type,
    actorId: actor.id,
    actorEmail: actor.email,
    action: entry.action,
    targetType: entry.targetType,
    targetId: entry.targetId,
    changes: entry.before === undefined && entry.after === undefined ? null : { before: entry.before ?? null, after: entry.after ?? null },
    ip: actor.ip,
    requestId: actor.requestId,
  })
}

/** Whether a database error (from postgres.js or PGlite, possibly wrapped by drizzle) is a unique violation. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (let current = error; current instanceof Error || (typeof current === 'object' && current !== null); current = (current as { cause?: unknown }).cause) {
    const { code, constraint_name: constraintName, constraint: pgliteConstraint } = current as { code?: unknown; constraint_name?: unknown; constraint?: unknown }
    if (code === '23505') return constraint === undefined || constraintName === constraint || pgliteConstraint === constraint
    if ((current as { cause?: unknown }).cause === current) break
  }
  return false
}

/** Unix seconds of a timestamp column. */
export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000)
}

/**
 * One page of a list ordered by `(createdAt, id)`, oldest first (or newest first, when `read` orders
 * so and `newestFirst` says it); `page.after` names the last row of the previous page (400 when
 * `cursorRow` finds no such row in this list). `cursorRow` selects that row's `(createdAt, id)`: it
 * is compared in SQL, since Postgres keeps microseconds and a JS Date only milliseconds.
 */
export async function readPage<T>(
  page: PageQuery,
  order: [createdAt: AnyPgColumn, id: AnyPgColumn],
  cursorRow: (after: string) => PgSelect,
  read: (after: SQL | undefined, limit: number) => Promise<T[]>,
  { newestFirst = false }: { newestFirst?: boolean } = {},
): Promise<Page<T>> {
  let after: SQL | undefined
  if (page.after !== undefined) {
    const cursor = cursorRow(page.after)
    if ((await cursor).length === 0) throw new GatewayError('invalid_request', `'${page.after}' is not an id from this list.`, 'after')
    after = newestFirst ? sql`(${order[0]}, ${order[1]}) < (${cursor})` : sql`(${order[0]}, ${order[1]}) > (${cursor})`
  }
  const rows = await read(after, page.limit + 1)
  return { items: rows.slice(0, page.limit), hasMore: rows.length > page.limit }
}
