import { sql } from 'drizzle-orm'
import type { LateUsage, LedgerCounters } from '../../core/admission'
import type { LateUsageReader, LedgerReader, UsageRowFinder, UsageRowsFound } from '../../core/ports'
import type { Drizzle } from './drizzle'

/**
 * Reads the counters admission starts from out of the ledger: the balance is every credit minus
 * every debit (usage rows, summed per day in usage_totals, so the read does not grow with an
 * organization's history), and a month's spend is the sum of the usage rows created in that
 * calendar month of the organization's time zone. One statement, so one snapshot: the balance,
 * the spends and which of the asked request ids have rows agree with each other (the sums change
 * in the transaction of their rows), and the snapshot itself is returned, for `readUsageAfter` to
 * find the rows it did not hold.
 */
export function createLedgerReader(db: Drizzle): LedgerReader & LateUsageReader & UsageRowFinder {
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
        SELECT 'recorded', request_id, NULL FROM usage_events
          WHERE org_id = ${orgId} AND request_id IN (SELECT json_array_elements_text(${idList(requestIds)}::json))`
      const result = await db.execute(sql`
        WITH bounds AS (
          SELECT make_timestamptz(${year}, ${monthNumber}, 1, 0, 0, 0, ${timeZone}) AS starts,
                 make_timestamptz(${next.year}, ${next.month}, 1, 0, 0, 0, ${timeZone}) AS ends)
        SELECT 'balance' AS kind, NULL AS id,
          (COALESCE((SELECT SUM(amount_micros) FROM credit_transactions WHERE org_id = ${orgId}), 0)
            - COALESCE((SELECT SUM(cost_micros) FROM usage_totals WHERE org_id = ${orgId}), 0))::text AS amount
        UNION ALL
        -- Both spends from one pass over the month's rows (a busy organization has millions): one
        -- sum per key and project, the project's sums added up here.
        SELECT 'spend', json_build_array(key_id, project_id)::text, SUM(cost_micros)::text
          FROM usage_events, bounds
          WHERE org_id = ${orgId} AND created_at >= starts AND created_at < ends
          GROUP BY key_id, project_id
        UNION ALL
        SELECT 'snapshot', pg_current_snapshot()::text, NULL
        ${recorded}`)
      let balanceMicros = 0n
      const keySpend = new Map<string, bigint>()
      const projectSpend = new Map<string, bigint>()
      const recordedIds: string[] = []
      let snapshot: string | undefined
      for (const row of rowsOf<{ kind: string; id: string; amount: string }>(result)) {
        if (row.kind === 'balance') balanceMicros = BigInt(row.amount)
        else if (row.kind === 'spend') {
          const [keyId, projectId] = JSON.parse(row.id) as [string, string]
          const amount = BigInt(row.amount)
          keySpend.set(keyId, (keySpend.get(keyId) ?? 0n) + amount)
          projectSpend.set(projectId, (projectSpend.get(projectId) ?? 0n) + amount)
        } else if (row.kind === 'snapshot') snapshot = row.id
        else recordedIds.push(row.id)
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

/** postgres-js answers an array of rows, PGlite an object with `rows`. */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? [])
}
