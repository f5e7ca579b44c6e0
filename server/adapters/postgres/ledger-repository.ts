import { sql } from 'drizzle-orm'
import type { OrgCounters } from '../../core/admission'
import type { LedgerReader } from '../../core/ports'
import type { Drizzle } from './drizzle'

/**
 * Reads the counters admission starts from out of the ledger: the balance is every credit minus
 * every debit (usage rows), and a month's spend is the sum of the usage rows created in that
 * calendar month of the organization's time zone.
 */
export function createLedgerReader(db: Drizzle): LedgerReader {
  return {
    async readCounters(orgId: string, month: string, timeZone: string): Promise<OrgCounters> {
      const year = Number(month.slice(0, 4))
      const monthNumber = Number(month.slice(4, 6))
      const balance = await db.execute(sql`
        SELECT (COALESCE((SELECT SUM(amount_micros) FROM credit_transactions WHERE org_id = ${orgId}), 0)
          - COALESCE((SELECT SUM(cost_micros) FROM usage_events WHERE org_id = ${orgId}), 0))::text AS balance`)
      const spends = await db.execute(sql`
        WITH bounds AS (
          SELECT make_timestamptz(${year}, ${monthNumber}, 1, 0, 0, 0, ${timeZone}) AS starts,
                 make_timestamptz(${year}, ${monthNumber}, 1, 0, 0, 0, ${timeZone}) + interval '1 month' AS ends)
        SELECT 'key' AS kind, key_id AS id, SUM(cost_micros)::text AS spend FROM usage_events, bounds
          WHERE org_id = ${orgId} AND created_at >= starts AND created_at < ends GROUP BY key_id
        UNION ALL
        SELECT 'project', project_id, SUM(cost_micros)::text FROM usage_events, bounds
          WHERE org_id = ${orgId} AND created_at >= starts AND created_at < ends GROUP BY project_id`)
      const keySpend = new Map<string, bigint>()
      const projectSpend = new Map<string, bigint>()
      for (const row of rowsOf<{ kind: string; id: string; spend: string }>(spends)) (row.kind === 'key' ? keySpend : projectSpend).set(row.id, BigInt(row.spend))
      return { month, balanceMicros: BigInt(rowsOf<{ balance: string }>(balance)[0]?.balance ?? '0'), keySpend, projectSpend }
    },
  }
}

/** postgres-js answers an array of rows, PGlite an object with `rows`. */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? [])
}
