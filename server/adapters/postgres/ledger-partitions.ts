import { sql } from 'drizzle-orm'
import { rowsOf, type Drizzle } from './drizzle'

/** Months after the current one (UTC) whose partition of usage_events is kept ready. */
export const usagePartitionMonthsAhead = 3

/** How often a gateway makes sure the coming months have their partitions. */
export const usagePartitionUpkeepMs = 6 * 60 * 60 * 1000

/**
 * Creates the partitions of usage_events for the month before the current one (UTC) to
 * `usagePartitionMonthsAhead` after it, those that do not exist yet, moving in any rows the
 * default partition took for them (migration 0010's `nilegate_create_usage_month`, which gateways
 * may call all at once). Returns the names of those it created.
 */
export async function ensureUsagePartitions(db: Drizzle): Promise<string[]> {
  const result = await db.execute(sql`
    SELECT 'usage_events_' || to_char(month, '"y"YYYY"m"MM') AS name, nilegate_create_usage_month(month) AS created
    FROM (SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => ahead))::date AS month
          FROM generate_series(-1, ${usagePartitionMonthsAhead}::integer) AS ahead) AS months`)
  return rowsOf<{ name: string; created: boolean }>(result)
    .filter((row) => row.created)
    .map((row) => row.name)
}

/** A partition of usage_events: its table, the UTC range it holds (null ends are open), its size. */
export interface UsagePartition {
  name: string
  /** Unix ms; null for the default partition, or the legacy one's open start. */
  fromMs: number | null
  untilMs: number | null
  isDefault: boolean
  /** The planner's estimate of its rows, and its bytes with indexes. */
  estimatedRows: number
  bytes: number
}

/** The partitions of usage_events, oldest first, the default one last. */
export async function listUsagePartitions(db: Drizzle): Promise<UsagePartition[]> {
  // Bounds are printed in the session's time zone; cast back, they are instants again.
  const result = await db.execute(sql`
    SELECT name, bound = 'DEFAULT' AS is_default,
      (extract(epoch FROM (regexp_match(bound, 'FROM [(]''([^'']+)''[)]'))[1]::timestamptz) * 1000)::bigint::text AS from_ms,
      (extract(epoch FROM (regexp_match(bound, 'TO [(]''([^'']+)''[)]'))[1]::timestamptz) * 1000)::bigint::text AS until_ms,
      estimated_rows, bytes
    FROM (SELECT child.relname::text AS name, pg_get_expr(child.relpartbound, child.oid) AS bound,
            GREATEST(child.reltuples, 0)::bigint::text AS estimated_rows, pg_total_relation_size(child.oid)::text AS bytes
          FROM pg_inherits JOIN pg_class AS child ON child.oid = pg_inherits.inhrelid
          WHERE pg_inherits.inhparent = 'usage_events'::regclass) AS partitions`)
  const partitions = rowsOf<{ name: string; is_default: boolean; from_ms: string | null; until_ms: string | null; estimated_rows: string; bytes: string }>(result).map((row) => ({
    name: row.name,
    fromMs: row.from_ms === null ? null : Number(row.from_ms),
    untilMs: row.until_ms === null ? null : Number(row.until_ms),
    isDefault: row.is_default,
    estimatedRows: Number(row.estimated_rows),
    bytes: Number(row.bytes),
  }))
  return partitions.sort((a, b) => Number(a.isDefault) - Number(b.isDefault) || (a.fromMs ?? -Infinity) - (b.fromMs ?? -Infinity))
}

/**
 * Keeps the coming months' partitions ready while the database is open: at once, then every
 * `usagePartitionUpkeepMs`. A failure is logged and tried again at the next turn; rows meanwhile
 * go to the default partition, from which the month's partition takes them when it is created.
 */
export function startUsagePartitionUpkeep(db: Drizzle, log: (message: string) => void): { stop(): void } {
  const run = () => ensureUsagePartitions(db).catch((error: unknown) => log(`ledger: creating the coming months' partitions of usage_events failed: ${(error as Error).message}`))
  const timer = setInterval(run, usagePartitionUpkeepMs)
  timer.unref?.()
  return { stop: () => clearInterval(timer) }
}
