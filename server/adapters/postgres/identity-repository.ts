import type { PGlite } from '@electric-sql/pglite'
import { eq, sql } from 'drizzle-orm'
import type { ApiKeyIdentity, IdentityStore } from '../../core/ports'
import type { Drizzle } from './drizzle'
import { apiKeys, organizations, projects } from './schema'

const identityFields = {
  keyId: apiKeys.id,
  orgId: apiKeys.orgId,
  projectId: apiKeys.projectId,
  revokedAt: apiKeys.revokedAt,
  expiresAt: apiKeys.expiresAt,
  scopes: apiKeys.scopes,
  rpmLimit: apiKeys.rpmLimit,
  orgStatus: organizations.status,
  planTier: organizations.planTier,
  orgRpmCeiling: organizations.customRpmCeiling,
  projectRpmOverride: projects.rpmOverride,
  keyMonthlyCapMicros: apiKeys.monthlySpendCapMicros,
  projectMonthlyCapMicros: projects.monthlySpendCapMicros,
  billingTimeZone: organizations.billingTimeZone,
  requiresRegion: organizations.requiresRegion,
  ipAllowList: apiKeys.ipAllowList,
  orgAllowedModels: organizations.allowedModels,
  projectEnabledModels: projects.enabledModels,
  projectArchivedAt: projects.archivedAt,
}

/** The statement's name on Postgres, where postgres-js prepares it on each connection. */
const statementName = 'find_api_key_by_hash'
/** The statement PGlite prepares (drizzle's PGlite driver prepares none of its own). */
const pgliteStatementName = 'pglite_find_api_key_by_hash'

// What every key's hash looks like (hashApiKey in api-keys.ts): the only text put into a statement.
const hashPattern = /^[0-9a-f]{64}$/

// Timestamps as the text Postgres sends, for the columns' own decoding, as drizzle's PGlite driver
// does. By their type OIDs (pg_type: timestamp, timestamptz, interval, date), which PGlite's `types`
// names: importing PGlite for them would load it where it does not run (see openPglite).
const asText = (value: string) => value
const driverParsers = { 1114: asText, 1184: asText, 1186: asText, 1082: asText }

/**
 * API key lookups for authentication: one indexed query joining the key with its organization and
 * project. A cold key (a first use, a start, the cache's refresh) costs one.
 *
 * On PGlite (`pglite`) the statement is prepared once on its one connection and run with EXECUTE:
 * PGlite sends every query unnamed, so Postgres planned the three-table join again each time, and
 * lookups wait for each other on that connection: through the database thread a lookup took 0.93
 * ms, prepared 0.50.
 */
export function createIdentityRepository(db: Drizzle, pglite?: PGlite): IdentityStore {
  const select = selectIdentity(db)
  const findByHash = select.prepare(statementName)
  const executeOnPglite = pglite ? preparedOnPglite(pglite, select.toSQL()) : null

  return {
    async findApiKeyByHash(hashHex: string): Promise<ApiKeyIdentity | null> {
      const [row] = executeOnPglite && hashPattern.test(hashHex) ? await executeOnPglite(hashHex) : await findByHash.execute({ hashHex })
      if (!row) return null
      return { ...row, revokedAt: row.revokedAt?.getTime() ?? null, expiresAt: row.expiresAt?.getTime() ?? null, projectArchivedAt: row.projectArchivedAt?.getTime() ?? null }
    },
  }
}

// At most one row: secret_hash is unique.
function selectIdentity(db: Drizzle) {
  return db
    .select(identityFields)
    .from(apiKeys)
    .innerJoin(organizations, eq(organizations.id, apiKeys.orgId))
    .innerJoin(projects, eq(projects.id, apiKeys.projectId))
    .where(eq(apiKeys.secretHash, sql.placeholder('hashHex')))
}

type IdentityRow = Awaited<ReturnType<ReturnType<typeof selectIdentity>['execute']>>[number]

/** Runs the select, whose one parameter is the hash, as a statement PGlite prepares at first use. */
function preparedOnPglite(pglite: PGlite, select: { sql: string; params: unknown[] }) {
  if (select.params.length !== 1) throw new Error(`the key lookup takes the hash alone, not ${select.params.length} parameters`)
  const selectSql = select.sql
  let prepared: Promise<unknown> | null = null
  const columns = Object.entries(identityFields)
  return async (hashHex: string): Promise<IdentityRow[]> => {
    // A PREPARE that failed is tried again by the next lookup.
    prepared ??= pglite.exec(`prepare ${pgliteStatementName} (text) as ${selectSql}`).catch((error: unknown) => {
      prepared = null
      throw error
    })
    await prepared
    // EXECUTE takes no bound parameters: the hash is 64 hex digits, checked by the caller.
    const { rows } = await pglite.query<unknown[]>(`execute ${pgliteStatementName}('${hashHex}')`, [], { rowMode: 'array', parsers: driverParsers })
    // Each value decoded by its column, as drizzle decodes the rows of its own queries.
    return rows.map((values) => Object.fromEntries(columns.map(([name, column], index) => [name, values[index] === null ? null : column.mapFromDriverValue(values[index])])) as IdentityRow)
  }
}
