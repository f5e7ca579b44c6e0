import { sql, type SQL } from 'drizzle-orm'

/**
 * SQL for reading the usage rollups of migration 0010 (usage_rollup_quarters, _hours and _days):
 * which of their rows make up a span of time exactly. Quarter-hours and hours start on UTC
 * multiples of their length; every time zone's offset is a whole number of quarter-hours, so the
 * local midnights and hours that start months and buckets are quarter-hour boundaries, and a span
 * between two of them is its whole hours plus the quarter-hours at either end.
 *
 * A ledger read splits its month here, in SQL, in the statement that reads the sums, so that the
 * zone and the days it may use are those of the read's snapshot. Reports split their buckets in
 * usage-pieces.ts, which also cuts a range's ends at any second.
 */

const origin = sql.raw(`timestamptz '2000-01-01 00:00:00+00'`)

/** The start of the UTC hour holding `at`. */
const floorHour = (at: SQL) => sql`date_bin('1 hour', ${at}, ${origin})`
/** The first UTC hour boundary at or after `at`. */
const ceilHour = (at: SQL) => sql`date_bin('1 hour', ${at} + interval '59 minutes 59.999999 seconds', ${origin})`

/**
 * Conditions on a rollup's `slot` that pick, from the hours and from the quarter-hours, the rows
 * that together cover [from, until) once each: the whole hours inside it, and the quarter-hours
 * before the first and after the last of them (all of it when no whole hour fits). `from` and
 * `until` are quarter-hour boundaries with `from <= until`; they are repeated, so pass columns or
 * parameters, not subqueries that cost.
 */
export function slotsCovering(slot: SQL, from: SQL, until: SQL): { hours: SQL; quarters: [before: SQL, after: SQL] } {
  const firstHour = ceilHour(from)
  const lastHour = sql`GREATEST(${floorHour(until)}, ${firstHour})`
  // Two ranges, read as two index scans: an OR of them is planned as a filter over every row of
  // the organization.
  return {
    hours: sql`${slot} >= ${firstHour} AND ${slot} < ${lastHour}`,
    quarters: [sql`${slot} >= ${from} AND ${slot} < LEAST(${firstHour}, ${until})`, sql`${slot} >= ${lastHour} AND ${slot} < ${until}`],
  }
}
