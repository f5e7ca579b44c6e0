import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import type * as schema from './schema'

/** A drizzle handle on either PGlite or Postgres; repositories are written against this. */
export type Drizzle = PgDatabase<PgQueryResultHKT, typeof schema>
