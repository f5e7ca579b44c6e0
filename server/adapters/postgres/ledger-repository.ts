import { sql } from 'drizzle-orm'
import type { LedgerCounters } from '../../core/admission'
import type { LedgerReader } from '../../core/ports'
import type { Drizzle } from './drizzle'

/**
 * Reads the counters admission starts from out of the ledger: the balance is every credit minus
 * every debit (usage rows), and a month's spend is the sum of the usage rows created in that
 * calendar month of the organization's time zone. One statement, so one snapshot: the balance, the
 * spends and which of the asked request ids have rows agree with each other.
 */
export function createLedgerReader(db: Drizzle): LedgerReader {
  return {
    async readCounters(orgId: string, month: string, timeZone: string, requestIds: readonly string[] = []): Promise<LedgerCounters> {
      const year = Number(month.slice(0, 4))
      const monthNumber = Number(month.slice(4, 6))
      // The ids go as one JSON parameter: a rebuild after a busy outage may ask about more of them
      // than a statement may have parameters.
      const recorded = requestIds.length === 0
        ? sql``
        : sql`UNION ALL
        SELECT 'recorded', request_id, NULL FROM usage_events
          WHERE org_id = ${orgId} AND request_id IN (SELECT json_array_elements_text(${JSON.stringify(requestIds)}::json))`
      const result = await db.execute(sql`
        WITH bounds AS (
          SELECT make_timestamptz(${year}, ${monthNumber}, 1, 0, 0, 0, ${timeZone}) AS starts,
                 make_timestamptz(${year}, ${monthNumber}, 1, 0, 0, 0, ${timeZone}) + interval '1 month' AS ends)
        SELECT 'balance' AS kind, NULL AS id,
          (COALESCE((SELECT SUM(amount_micros) FROM credit_transactions WHERE org_id = ${orgId}), 0)
            - COALESCE((SELECT SUM(cost_micros) FROM usage_events WHERE org_id = ${orgId}), 0))::text AS amount
        UNION ALL
        SELECT 'key', key_id, SUM(cost_micros)::text FROM usage_events, bounds
          WHERE org_id = ${orgId} AND created_at >= starts AND created_at < ends GROUP BY key_id
        UNION ALL
        SELECT 'project', project_id, SUM(cost_micros)::text FROM usage_events, bounds
          WHERE org_id = ${orgId} AND created_at >= starts AND created_at < ends GROUP BY project_id
        ${recorded}`)
      let balanceMicros = 0n
      const keySpend = new Map<string, bigint>()
      const projectSpend = new Map<string, bigint>()
      const recordedIds: string[] = []
      for (const row of rowsOf<{ kind: string; id: string; amount: string }>(result)) {
        if (row.kind === 'balance') balanceMicros = BigInt(row.amount)
        else if (row.kind === 'key') keySpend.set(row.id, BigInt(row.amount))
        else if (row.kind === 'project') projectSpend.set(row.id, BigInt(row.amount))
        else recordedIds.push(row.id)
      }
      return { month, balanceMicros, keySpend, projectSpend, recordedIds }
    },
  }
}

/** postgres-js answers an array of rows, PGlite an object with `rows`. */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? [])
}
