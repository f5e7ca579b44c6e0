import { sql } from 'drizzle-orm'
import type { LateUsage, LedgerCounters } from '../../core/admission'
import type { LateUsageReader, LedgerReader, UsageRowFinder, UsageRowsFound } from '../../core/ports'
import { rowsOf, type Drizzle } from './drizzle'

/**
 * Reads the counters admission starts from out of the ledger: the balance is every credit minus
 * every debit (usage rows, summed per day in usage_totals, so the read does not grow with an
 * organization's history), and a month's spend is the sum of the usage rows created in that
 * calendar month of the organization's time zone. One statement, so one snapshot: the balance,
 * the spends and which of the asked request ids have rows agree with each other (the sums change
 * in the transaction of their rows), and the snapshot itself is returned, for `readUsageAfter` to
 * find the rows it did not hold.
 *
 * The spends start from the organization's checkpoint of the month when there is one (an earlier
 * read's sums and snapshot, spend_checkpoints) and add the rows that snapshot did not hold, found
 * by the transaction that wrote them: a read costs the rows written since the checkpoint rather
 * than the month's millions. The checkpoint is fetched first; its snapshot is older than the
 * read's, which holds everything it held, and the read takes it only if the organization's usage
 * epoch has not moved since (no row changed or removed) and its snapshot is not ahead of the
 * read's (restored from another cluster). A read that summed
 * `checkpointAfterRows` rows or more, or found no checkpoint it could use, leaves its own.
 */
export function createLedgerReader(db: Drizzle, options: { checkpointAfterRows?: number } = {}): LedgerReader & LateUsageReader & UsageRowFinder {
  const checkpointAfterRows = options.checkpointAfterRows ?? defaultCheckpointAfterRows
  return {
    async readCounters(orgId: string, month: string, timeZone: string, requestIds: readonly string[] = []): Promise<LedgerCounters> {
      const year = Number(month.slice(0, 4))
      const monthNumber = Number(month.slice(4, 6))
      // The month ends where the next begins in the zone. (`starts + interval '1 month'` adds a
      // month in the session's zone: from 30 April 21:00 UTC, the start of May in Cairo, that is
      // 30 May 21:00, a day short.)
      const next = monthNumber === 12 ? { year: year + 1, month: 1 } : { year, month: monthNumber + 1 }
      const recorded = requestIds.length === 0
        ? sql``
        : sql`UNION ALL
        SELECT 'recorded', request_id, NULL, NULL FROM usage_events
          WHERE org_id = ${orgId} AND request_id IN (SELECT json_array_elements_text(${idList(requestIds)}::json))`
      // The checkpoint first, so that the read below can be planned for its snapshot: an index
      // range over the transactions from its xmin on, a handful of rows where the month has millions.
      const checkpoint = await readCheckpoint(db, orgId, month, timeZone)
      const bounds = sql`created_at >= make_timestamptz(${year}, ${monthNumber}, 1, 0, 0, 0, ${timeZone}) AND created_at < make_timestamptz(${next.year}, ${next.month}, 1, 0, 0, 0, ${timeZone})`
      // The checkpoint holds while the organization's epoch is still its own (no row changed since)
      // and its snapshot is not ahead of this one (one restored from another cluster's transaction
      // ids is). Then the month's rows since it are summed, else all of them; one sum per key and
      // project, the projects' sums added up here. Rows of transactions that have not begun yet
      // (another cluster's, restored) are never "since" anything: the full sums count them.
      const usable = checkpoint
        ? sql`(SELECT epoch FROM epoch) = ${checkpoint.epoch}::bigint AND ${checkpoint.xmax}::xid8 <= pg_snapshot_xmax(pg_current_snapshot())`
        : sql`false`
      const sinceCheckpoint = checkpoint
        ? sql`SELECT 'spend', json_build_array(key_id, project_id)::text, SUM(cost_micros)::text, COUNT(*)
          FROM usage_events
          WHERE (SELECT usable FROM checkpoint_usable) AND org_id = ${orgId}
            AND inserted_xid >= ${checkpoint.xmin}::xid8 AND inserted_xid < pg_snapshot_xmax(pg_current_snapshot())
            AND NOT pg_visible_in_snapshot(inserted_xid, ${checkpoint.snapshot}::pg_snapshot) AND ${bounds}
          GROUP BY key_id, project_id
        UNION ALL`
        : sql``
      const result = await db.execute(sql`
        WITH epoch AS (SELECT COALESCE((SELECT epoch FROM usage_epochs WHERE org_id = ${orgId}), 0) AS epoch),
        checkpoint_usable AS (SELECT ${usable} AS usable)
        SELECT 'balance' AS kind, NULL AS id,
          (COALESCE((SELECT SUM(amount_micros) FROM credit_transactions WHERE org_id = ${orgId}), 0)
            - COALESCE((SELECT SUM(cost_micros) FROM usage_totals WHERE org_id = ${orgId}), 0))::text AS amount,
          NULL::bigint AS rows
        UNION ALL
        SELECT 'epoch', NULL, epoch::text, NULL FROM epoch
        UNION ALL
        SELECT 'usable', NULL, usable::text, NULL FROM checkpoint_usable
        UNION ALL
        ${sinceCheckpoint}
        SELECT 'spend', json_build_array(key_id, project_id)::text, SUM(cost_micros)::text, COUNT(*)
          FROM usage_events
          WHERE NOT (SELECT usable FROM checkpoint_usable) AND org_id = ${orgId} AND ${bounds}
          GROUP BY key_id, project_id
        UNION ALL
        SELECT 'snapshot', pg_current_snapshot()::text, NULL, NULL
        ${recorded}`)
      let balanceMicros = 0n
      let epoch = '0'
      let checkpointed = false
      let rowsSummed = 0
      // Per key and project: the checkpoint's sums when it holds, then the rows since (or all).
      const spends = new Map<string, { keyId: string; projectId: string; micros: bigint }>()
      const addSpend = (keyId: string, projectId: string, micros: bigint) => {
        const pair = JSON.stringify([keyId, projectId])
        const spend = spends.get(pair)
        if (spend) spend.micros += micros
        else spends.set(pair, { keyId, projectId, micros })
      }
      const recordedIds: string[] = []
      let snapshot: string | undefined
      for (const row of rowsOf<{ kind: string; id: string; amount: string; rows: string | number | null }>(result)) {
        if (row.kind === 'balance') balanceMicros = BigInt(row.amount)
        else if (row.kind === 'epoch') epoch = row.amount
        else if (row.kind === 'usable') checkpointed = row.amount === 'true'
        else if (row.kind === 'spend') {
          const [keyId, projectId] = JSON.parse(row.id) as [string, string]
          addSpend(keyId, projectId, BigInt(row.amount))
          rowsSummed += Number(row.rows)
        } else if (row.kind === 'snapshot') snapshot = row.id
        else recordedIds.push(row.id)
      }
      if (checkpoint && checkpointed) for (const [keyId, projectId, micros] of checkpoint.spends) addSpend(keyId, projectId, BigInt(micros))
      const keySpend = new Map<string, bigint>()
      const projectSpend = new Map<string, bigint>()
      for (const { keyId, projectId, micros } of spends.values()) {
        keySpend.set(keyId, (keySpend.get(keyId) ?? 0n) + micros)
        projectSpend.set(projectId, (projectSpend.get(projectId) ?? 0n) + micros)
      }
      if (snapshot !== undefined && (!checkpointed || rowsSummed >= checkpointAfterRows)) {
        const sums: CheckpointSpends = [...spends.values()].map(({ keyId, projectId, micros }) => [keyId, projectId, micros.toString()])
        await saveCheckpoint(db, { orgId, month, timeZone, snapshot, epoch, sums })
      }
      return { month, balanceMicros, keySpend, projectSpend, recordedIds, snapshot }
    },

    // Rows are found by the transaction that wrote them: committed after the snapshot was taken,
    // or still running then. Rows from before the column existed have no transaction and are old.
    async readUsageAfter(orgId: string, snapshot: string, sinceMs: number, untilMs: number, timeZone: string): Promise<LateUsage[]> {
      const result = await db.execute(sql`
        SELECT request_id, key_id, project_id, to_char(created_at AT TIME ZONE ${timeZone}, 'YYYYMM') AS month, cost_micros::text AS cost
        FROM usage_events
        WHERE org_id = ${orgId} AND created_at >= to_timestamp(${sinceMs}::double precision / 1000) AND created_at < to_timestamp(${untilMs}::double precision / 1000)
          AND inserted_xid IS NOT NULL AND NOT pg_visible_in_snapshot(inserted_xid, ${snapshot}::pg_snapshot)
        ORDER BY request_id`)
      return rowsOf<UsageRow>(result).map(lateUsage)
    },

    async findUsageRows(orgId: string, snapshot: string, requestIds: readonly string[], timeZone: string): Promise<UsageRowsFound> {
      if (requestIds.length === 0) return { after: [], missingIds: [] }
      const result = await db.execute(sql`
        SELECT request_id, key_id, project_id, to_char(created_at AT TIME ZONE ${timeZone}, 'YYYYMM') AS month, cost_micros::text AS cost,
          (inserted_xid IS NULL OR pg_visible_in_snapshot(inserted_xid, ${snapshot}::pg_snapshot)) AS held
        FROM usage_events
        WHERE org_id = ${orgId} AND request_id IN (SELECT json_array_elements_text(${idList(requestIds)}::json))`)
      const rows = rowsOf<UsageRow & { held: boolean }>(result)
      const found = new Set(rows.map((row) => row.request_id))
      return {
        after: rows.filter((row) => !row.held).map(lateUsage).sort((a, b) => (a.requestId < b.requestId ? -1 : a.requestId > b.requestId ? 1 : 0)),
        missingIds: requestIds.filter((id) => !found.has(id)),
      }
    },
  }
}

/** A read that summed this many usage rows leaves its sums as the organization's checkpoint of the month. */
const defaultCheckpointAfterRows = 10_000

/** The spends of a checkpoint: `[keyId, projectId, micro-EGP]`, the amounts as text. */
type CheckpointSpends = [keyId: string, projectId: string, micros: string][]

interface Checkpoint {
  snapshot: string
  /** The snapshot's xmin: every transaction before it had ended. */
  xmin: string
  /** The snapshot's xmax: no transaction from it on had begun. */
  xmax: string
  epoch: string
  spends: CheckpointSpends
}

async function readCheckpoint(db: Drizzle, orgId: string, month: string, timeZone: string): Promise<Checkpoint | null> {
  const [row] = rowsOf<{ snapshot: string; xmin: string; xmax: string; epoch: string; spends: string }>(
    await db.execute(sql`
      SELECT snapshot::text AS snapshot, pg_snapshot_xmin(snapshot)::text AS xmin, pg_snapshot_xmax(snapshot)::text AS xmax, epoch::text AS epoch, spends::text AS spends
      FROM spend_checkpoints WHERE org_id = ${orgId} AND month = ${month} AND time_zone = ${timeZone}`),
  )
  return row ? { snapshot: row.snapshot, xmin: row.xmin, xmax: row.xmax, epoch: row.epoch, spends: JSON.parse(row.spends) as CheckpointSpends } : null
}

/**
 * Keeps a read's spends as the organization's checkpoint of the month, in place of the one there:
 * any checkpoint this cluster's reads leave is right for its snapshot, an older one only leaves
 * more rows to add. Best effort: a read stays right without it, and only costs more.
 */
async function saveCheckpoint(db: Drizzle, checkpoint: { orgId: string; month: string; timeZone: string; snapshot: string; epoch: string; sums: CheckpointSpends }): Promise<void> {
  const { orgId, month, timeZone, snapshot, epoch, sums } = checkpoint
  try {
    await db.execute(sql`
      INSERT INTO spend_checkpoints (org_id, month, time_zone, snapshot, epoch, spends)
      VALUES (${orgId}, ${month}, ${timeZone}, ${snapshot}::pg_snapshot, ${epoch}::bigint, ${JSON.stringify(sums)}::jsonb)
      ON CONFLICT (org_id, month, time_zone) DO UPDATE
        SET snapshot = EXCLUDED.snapshot, epoch = EXCLUDED.epoch, spends = EXCLUDED.spends, created_at = now()`)
  } catch {
    // Another read saving the same checkpoint at once, or the database going away: the next read saves one.
  }
}

interface UsageRow {
  request_id: string
  key_id: string
  project_id: string
  month: string
  cost: string
}

function lateUsage(row: UsageRow) {
  return { requestId: row.request_id, keyId: row.key_id, projectId: row.project_id, month: row.month, costMicros: BigInt(row.cost) }
}

// Ids go as one JSON parameter: there may be more of them than a statement may have parameters.
function idList(requestIds: readonly string[]): string {
  return JSON.stringify(requestIds)
}
