import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import type * as schema from './schema'

/** A drizzle handle on either PGlite or Postgres; repositories are written against this. */
export type Drizzle = PgDatabase<PgQueryResultHKT, typeof schema>

/** The rows of a `db.execute` result: postgres-js answers an array of rows, PGlite an object with `rows`. */
export function rowsOf<Row>(result: unknown): Row[] {
  return Array.isArray(result) ? (result as Row[]) : ((result as { rows?: Row[] }).rows ?? [])
}
