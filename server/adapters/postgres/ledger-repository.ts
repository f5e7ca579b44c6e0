import { sql } from 'drizzle-orm'
import type { LateUsage, LedgerCounters } from '../../core/admission'
import type { LateUsageReader, LedgerReader, UsageRowFinder, UsageRowsFound } from '../../core/ports'
import { rowsOf, type Drizzle } from './drizzle'
import { slotsCovering } from './usage-rollups'

/**
 * Reads the counters admission starts from out of the ledger: the balance is every credit minus
 * every debit (usage rows, summed per day in usage_totals), and a month's spend per key and project
 * is summed from the usage rollups of that calendar month of the organization's time zone: its
 * local days while they are whole in that zone, hours and quarter-hours before (usage-rollups.ts).
 * The triggers that keep those sums run in the transactions of their rows, so the read costs the
 * month's days and keys, never its rows, and never touches a closed period's raw rows. One
 * statement, so one snapshot: the balance, the spends and which of the asked request ids have rows
 * agree with each other, and the snapshot itself is returned, for `readUsageAfter` to find the rows
 * it did not hold.
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
      const daysStart = sql`(SELECT days_start FROM month)`
      // The month before its whole days, from the hours and quarter-hours (each branch's own slot).
      const before = slotsCovering(sql`slot`, sql`(SELECT starts FROM month)`, daysStart)
      const result = await db.execute(sql`
        WITH zone AS (
          SELECT make_timestamptz(${year}, ${monthNumber}, 1, 0, 0, 0, ${timeZone}) AS starts,
            make_timestamptz(${next.year}, ${next.month}, 1, 0, 0, 0, ${timeZone}) AS ends,
            -- Days of the zone are whole from this on; none when it is not the organization's zone.
            COALESCE((SELECT CASE WHEN billing_time_zone = ${timeZone} THEN COALESCE(day_rollups_from, '-infinity') END
                      FROM organizations WHERE id = ${orgId}), 'infinity') AS days_from
        ),
        month AS (SELECT starts, ends, LEAST(ends, GREATEST(starts, days_from)) AS days_start FROM zone)
        SELECT 'balance' AS kind, NULL AS id,
          (COALESCE((SELECT SUM(amount_micros) FROM credit_transactions WHERE org_id = ${orgId}), 0)
            - COALESCE((SELECT SUM(cost_micros) FROM usage_totals WHERE org_id = ${orgId}), 0))::text AS amount
        UNION ALL
        SELECT 'spend', json_build_array(key_id, project_id)::text, SUM(cost_micros)::text
        FROM (
          SELECT key_id, project_id, cost_micros FROM usage_rollup_days
            WHERE org_id = ${orgId} AND time_zone = ${timeZone}
              AND day >= (${daysStart} AT TIME ZONE ${timeZone})::date AND day < ((SELECT ends FROM month) AT TIME ZONE ${timeZone})::date
          UNION ALL
          SELECT key_id, project_id, cost_micros FROM usage_rollup_hours WHERE org_id = ${orgId} AND ${before.hours}
          UNION ALL
          SELECT key_id, project_id, cost_micros FROM usage_rollup_quarters WHERE org_id = ${orgId} AND ${before.quarters[0]}
          UNION ALL
          SELECT key_id, project_id, cost_micros FROM usage_rollup_quarters WHERE org_id = ${orgId} AND ${before.quarters[1]}
        ) AS month_sums
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
          const micros = BigInt(row.amount)
          keySpend.set(keyId, (keySpend.get(keyId) ?? 0n) + micros)
          projectSpend.set(projectId, (projectSpend.get(projectId) ?? 0n) + micros)
        } else if (row.kind === 'snapshot') snapshot = row.id
        else recordedIds.push(row.id)
      }
      return { month, balanceMicros, keySpend, projectSpend, recordedIds, snapshot }
    },

    // Rows are found by the transaction that wrote them here (nilegate_row_xid): committed after
    // the snapshot was taken, or still running then.
    async readUsageAfter(orgId: string, snapshot: string, sinceMs: number, untilMs: number, timeZone: string): Promise<LateUsage[]> {
      const result = await db.execute(sql`
        SELECT request_id, key_id, project_id, to_char(created_at AT TIME ZONE ${timeZone}, 'YYYYMM') AS month, cost_micros::text AS cost
        FROM usage_events
        WHERE org_id = ${orgId} AND created_at >= to_timestamp(${sinceMs}::double precision / 1000) AND created_at < to_timestamp(${untilMs}::double precision / 1000)
          AND NOT pg_visible_in_snapshot(nilegate_row_xid(xmin), ${snapshot}::pg_snapshot)
        ORDER BY request_id`)
      return rowsOf<UsageRow>(result).map(lateUsage)
    },

    async findUsageRows(orgId: string, snapshot: string, requestIds: readonly string[], timeZone: string): Promise<UsageRowsFound> {
      if (requestIds.length === 0) return { after: [], missingIds: [] }
      const result = await db.execute(sql`
        SELECT request_id, key_id, project_id, to_char(created_at AT TIME ZONE ${timeZone}, 'YYYYMM') AS month, cost_micros::text AS cost,
          pg_visible_in_snapshot(nilegate_row_xid(xmin), ${snapshot}::pg_snapshot) AS held
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
