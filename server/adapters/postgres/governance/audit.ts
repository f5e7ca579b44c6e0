import { GatewayError } from '@nilegate/shared/errors'
import { and, asc, desc, eq, gt, gte, inArray, lt, type Column, type SQL } from 'drizzle-orm'
import type { AuditLogQuery, AuditLogRecord, AuditStore } from '../../../core/governance/audit'
import type { Drizzle } from '../drizzle'
import { auditLogs } from '../schema'
import { unixSeconds } from './common'

type AuditLogRow = typeof auditLogs.$inferSelect

function toAuditLogRecord(row: AuditLogRow): AuditLogRecord {
  return {
    id: row.id,
    orgId: row.orgId,
    projectId: row.projectId,
    actor: { type: row.actorType, id: row.actorId, email: row.actorEmail },
    action: row.action,
    target: { type: row.targetType, id: row.targetId },
    changes: row.changes,
    ip: row.ip,
    requestId: row.requestId,
    createdAt: unixSeconds(row.createdAt),
  }
}

/** `column in (values)`, or no condition when there are no values. */
function anyOf(column: Column, values: string[] | undefined): SQL | undefined {
  return values && values.length > 0 ? inArray(column, values) : undefined
}

/** The audit trail is only ever read here; the database refuses to change or delete records. */
export function createAuditRepository(db: Drizzle): AuditStore {
  /** The position of the cursor record, looked up within the organization so no other one's record can steer the page. */
  async function cursorSeq(orgId: string, id: string, param: 'after' | 'before'): Promise<number> {
    const [row] = await db
      .select({ seq: auditLogs.seq })
      .from(auditLogs)
      .where(and(eq(auditLogs.id, id), eq(auditLogs.orgId, orgId)))
      .limit(1)
    if (!row) throw new GatewayError('invalid_request', `No audit log record '${id}' in this organization; pass an id from a previous page.`, param)
    return row.seq
  }

  return {
    async listAuditLogs(query: AuditLogQuery) {
      const { cursor } = query
      const after = cursor && 'after' in cursor ? await cursorSeq(query.orgId, cursor.after, 'after') : undefined
      const before = cursor && 'before' in cursor ? await cursorSeq(query.orgId, cursor.before, 'before') : undefined
      const where = and(
        eq(auditLogs.orgId, query.orgId),
        anyOf(auditLogs.actorId, query.actorIds),
        anyOf(auditLogs.action, query.actions),
        anyOf(auditLogs.targetId, query.targetIds),
        anyOf(auditLogs.projectId, query.projectIds),
        // effective_at is the record's time truncated to a second, so `until` covers its whole second.
        query.since === undefined ? undefined : gte(auditLogs.createdAt, new Date(query.since * 1000)),
        query.until === undefined ? undefined : lt(auditLogs.createdAt, new Date((query.until + 1) * 1000)),
        after === undefined ? undefined : lt(auditLogs.seq, after),
        before === undefined ? undefined : gt(auditLogs.seq, before),
      )
      // A page before a record is the nearest newer records: read them oldest first, then turn them round.
      const rows = await db
        .select()
        .from(auditLogs)
        .where(where)
        .orderBy(before === undefined ? desc(auditLogs.seq) : asc(auditLogs.seq))
        .limit(query.limit + 1)
      const page = rows.slice(0, query.limit)
      if (before !== undefined) page.reverse()
      return { records: page.map(toAuditLogRecord), hasMore: rows.length > query.limit }
    },
  }
}
