import type { PGlite } from '@electric-sql/pglite'
import { eq, sql, type SQL } from 'drizzle-orm'
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

/**
 * The statements' names on Postgres, where postgres-js prepares them on each connection, and on
 * PGlite (drizzle's PGlite driver prepares none of its own): one key, and many. A key alone keeps a
 * statement of its own: by `= ANY($1)` it took twice as long on PGlite as by `= $1` (0.49 to 0.74
 * ms against 0.18 to 0.31, both prepared, 1,000 lookups in three runs).
 */
const statementNames = { one: 'find_api_key_by_hash', many: 'find_api_keys_by_hashes' }
const pgliteStatementNames = { one: 'pglite_find_api_key_by_hash', many: 'pglite_find_api_keys_by_hashes' }

// What every key's hash looks like (hashApiKey in api-keys.ts): the only text put into a statement.
const hashPattern = /^[0-9a-f]{64}$/

// Timestamps as the text Postgres sends, for the columns' own decoding, as drizzle's PGlite driver
// does. By their type OIDs (pg_type: timestamp, timestamptz, interval, date), which PGlite's `types`
// names: importing PGlite for them would load it where it does not run (see openPglite).
const asText = (value: string) => value
const driverParsers = { 1114: asText, 1184: asText, 1186: asText, 1082: asText }

/** The key lookups of the database: one key, or many in one statement. */
export interface IdentityRepository extends IdentityStore {
  /** Each hash's identity, or null, in the order given; hashes that are not 64 hex digits are no key's. */
  findApiKeysByHashes(hashesHex: readonly string[]): Promise<(ApiKeyIdentity | null)[]>
}

/**
 * API key lookups for authentication: one indexed query joining the keys with their organization
 * and project, for any number of hashes. A cold key (a first use, a start, the cache's refresh)
 * costs one; `batchKeyLookups` (key-lookups.ts) puts the cold keys of a turn in one.
 *
 * On PGlite (`pglite`) the statement is prepared once on its one connection and run with EXECUTE:
 * PGlite sends every query unnamed, so Postgres planned the three-table join again each time, and
 * lookups wait for each other on that connection: through the database thread a lookup took 0.93
 * ms, prepared 0.50.
 */
export function createIdentityRepository(db: Drizzle, pglite?: PGlite): IdentityRepository {
  const selectOne = selectIdentities(db, eq(apiKeys.secretHash, sql.placeholder('hash')))
  const selectMany = selectIdentities(db, sql`${apiKeys.secretHash} = ANY(${sql.placeholder('hashes')}::text[])`)
  const findOne = selectOne.prepare(statementNames.one)
  const findMany = selectMany.prepare(statementNames.many)
  const onPglite = pglite ? { one: preparedOnPglite(pglite, pgliteStatementNames.one, 'text', selectOne.toSQL()), many: preparedOnPglite(pglite, pgliteStatementNames.many, 'text[]', selectMany.toSQL()) } : null

  function rowsOf(hashes: string[]): Promise<IdentityRow[]> {
    if (hashes.length === 1) return onPglite ? onPglite.one(`'${hashes[0]}'`) : findOne.execute({ hash: hashes[0] })
    return onPglite ? onPglite.many(`'{${hashes.join(',')}}'`) : findMany.execute({ hashes })
  }

  async function findApiKeysByHashes(hashesHex: readonly string[]): Promise<(ApiKeyIdentity | null)[]> {
    const hashes = [...new Set(hashesHex.filter((hashHex) => hashPattern.test(hashHex)))]
    const rows = hashes.length === 0 ? [] : await rowsOf(hashes)
    const found = new Map(rows.map(({ secretHash, ...row }) => [secretHash, identityOf(row)]))
    return hashesHex.map((hashHex) => found.get(hashHex) ?? null)
  }

  return {
    findApiKeysByHashes,
    async findApiKeyByHash(hashHex: string): Promise<ApiKeyIdentity | null> {
      const [identity] = await findApiKeysByHashes([hashHex])
      return identity ?? null
    },
  }
}

function identityOf(row: Omit<IdentityRow, 'secretHash'>): ApiKeyIdentity {
  return { ...row, revokedAt: row.revokedAt?.getTime() ?? null, expiresAt: row.expiresAt?.getTime() ?? null, projectArchivedAt: row.projectArchivedAt?.getTime() ?? null }
}

// At most one row a hash: secret_hash is unique.
function selectIdentities(db: Drizzle, byHash: SQL) {
  return db
    .select({ ...identityFields, secretHash: apiKeys.secretHash })
    .from(apiKeys)
    .innerJoin(organizations, eq(organizations.id, apiKeys.orgId))
    .innerJoin(projects, eq(projects.id, apiKeys.projectId))
    .where(byHash)
}

type IdentityRow = Awaited<ReturnType<ReturnType<typeof selectIdentities>['execute']>>[number]

/**
 * Runs a select whose one parameter is the hash or the list of hashes (`type`), as a statement PGlite
 * prepares at first use; its argument is given as SQL text.
 */
function preparedOnPglite(pglite: PGlite, name: string, type: 'text' | 'text[]', select: { sql: string; params: unknown[] }) {
  if (select.params.length !== 1) throw new Error(`the key lookup takes the hashes alone, not ${select.params.length} parameters`)
  const selectSql = select.sql
  let prepared: Promise<unknown> | null = null
  const columns = Object.entries({ ...identityFields, secretHash: apiKeys.secretHash })
  return async (argument: string): Promise<IdentityRow[]> => {
    // A PREPARE that failed is tried again by the next lookup.
    prepared ??= pglite.exec(`prepare ${name} (${type}) as ${selectSql}`).catch((error: unknown) => {
      prepared = null
      throw error
    })
    await prepared
    // EXECUTE takes no bound parameters: each hash is 64 hex digits, checked by the caller.
    const { rows } = await pglite.query<unknown[]>(`execute ${name}(${argument})`, [], { rowMode: 'array', parsers: driverParsers })
    // Each value decoded by its column, as drizzle decodes the rows of its own queries.
    return rows.map((values) => Object.fromEntries(columns.map(([column, decoder], index) => [column, values[index] === null ? null : decoder.mapFromDriverValue(values[index])])) as IdentityRow)
  }
}
