import { createWriteStream, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import type { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import type { Governance } from '../../core/governance'
import type { IdentityStore, LateUsageReader, LedgerReader, UsageEvent, UsageRepository, UsageRowFinder } from '../../core/ports'
import type { BillingAccount } from '../../core/reconcile'
import { listBillingAccounts } from './billing-accounts'
import { answeringOutages } from './database-errors'
import { createDemoTenant, createDemoTenantIfEmpty, hasOrganizations, type DemoTenant, type DemoTenantOptions } from './demo-tenant'
import type { Drizzle } from './drizzle'
import { createGovernance } from './governance'
import { createIdentityRepository, type IdentityRepository } from './identity-repository'
import { batchKeyLookups } from './key-lookups'
import { ensureUsagePartitions, startUsagePartitionUpkeep } from './ledger-partitions'
import { createLedgerReader } from './ledger-repository'
import { ledgerStatus, retainUsage, type CopyOut, type LedgerStatus, type RetentionOptions, type RetentionReport } from './ledger-retention'
import { reconnectBackoffS } from './reconnect-backoff'
import * as schema from './schema'
import { copyUsageBatch, createUsageRepository, insertUsageRows, usageBatch, type UsageBatch, type UsageWriter } from './usage-repository'

export type { DemoTenant, DemoTenantOptions } from './demo-tenant'
export type { Drizzle } from './drizzle'

export interface DatabaseOptions {
  /** Postgres via postgres.js when set; otherwise the embedded PGlite under `dataDir`. */
  databaseUrl: string | null
  dataDir: string
  /** Connections in the postgres.js pool. */
  poolSize?: number
  /** Where an outage of Postgres is reported (once per 10 s while it lasts); console.error when absent. */
  log?: (message: string) => void
}

/**
 * What a running gateway asks of its database: repositories and whole operations, never a drizzle
 * handle, so the database may live in another thread (worker-database.ts).
 */
export interface GatewayDatabase {
  readonly kind: 'pglite' | 'postgres'
  readonly identities: IdentityStore
  readonly usage: UsageRepository
  readonly ledger: LedgerReader & LateUsageReader & UsageRowFinder
  /** The management API's repositories. */
  readonly governance: Governance
  createDemoTenant(options?: DemoTenantOptions): Promise<DemoTenant>
  /** Creates a demo tenant when the database has no organization yet; returns it, or null. */
  seedDemoIfEmpty(options?: DemoTenantOptions): Promise<DemoTenant | null>
  hasOrganizations(): Promise<boolean>
  /** Every organization with its billing time zone: what the reconciler walks. */
  listBillingAccounts(): Promise<BillingAccount[]>
  /** The partitions of the ledger and from when raw rows are kept (`ledger status`). */
  ledgerStatus(): Promise<LedgerStatus>
  /** Removes raw usage rows of old months, their sums kept (`ledger retain`, ledger-retention.ts). */
  retainUsage(options: RetentionOptions): Promise<RetentionReport>
  close(): Promise<void>
}

/** The governance database, opened and migrated, in this thread. */
export interface Database extends GatewayDatabase {
  readonly identities: IdentityRepository
  /** For repositories built on top of these tables. */
  readonly drizzle: Drizzle
  /** Applies migrations that are missing; `openDatabase` already did, so this is a no-op unless the folder changed. */
  migrate(): Promise<void>
}

const migrationsFolder = join(import.meta.dir, 'migrations')
const defaultPoolSize = 10

// Serialises migrations of gateways starting together on one Postgres database.
const migrationLockKey = 7_202_544_016

/**
 * Opens PGlite in `<dataDir>/pglite` or Postgres at `databaseUrl`, and applies the migrations.
 * The embedded database allows one process at a time: hold the data-dir lock (data-dir-lock.ts) first.
 */
export function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.databaseUrl === null ? openEmbeddedDatabase(options.dataDir, options.log) : migrated(openPostgres(options.databaseUrl, options.poolSize, options.log), options.log)
}

/** The embedded database as its own thread uses it (database-worker.ts): usage batches arrive as text. */
export interface EmbeddedDatabase extends Database {
  readonly kind: 'pglite'
  writeUsageBatch(batch: UsageBatch): Promise<void>
}

/** Opens PGlite in `<dataDir>/pglite` and applies the migrations; hold the data-dir lock first. */
export async function openEmbeddedDatabase(dataDir: string, log?: (message: string) => void): Promise<EmbeddedDatabase> {
  return migrated(await openPglite(dataDir), log)
}

/**
 * Applies the migrations and creates the coming months' partitions of the ledger, then keeps
 * creating them while the database is open (ledger-partitions.ts).
 */
async function migrated<T extends Database>(database: T, log: (message: string) => void = (message) => console.error(message)): Promise<T> {
  try {
    await database.migrate()
    await ensureUsagePartitions(database.drizzle)
  } catch (error) {
    await database.close()
    throw error
  }
  const upkeep = startUsagePartitionUpkeep(database.drizzle, log)
  const close = database.close
  return Object.assign(database, {
    close: () => {
      upkeep.stop()
      return close()
    },
  })
}

/** Creates a demo tenant when the database has no organization yet; returns it, or null. */
export function seedDemoIfEmpty(database: GatewayDatabase, options: DemoTenantOptions = {}): Promise<DemoTenant | null> {
  return database.seedDemoIfEmpty(options)
}

/**
 * The embedded Postgres's settings beyond PGlite's own. Postgres zeroes its shared buffers when it
 * starts, so PGlite's 128 MB of them were resident from the first second, whatever the data: 16 MB
 * hold the tables the request path reads (keys, totals, rollups) many times over, and the rest of
 * the data is read from the OS's file cache. An idle gateway went from 264 MB to 145 MB resident.
 */
const pgliteSettings = ['shared_buffers = 16MB']

/** Where the embedded database of `dataDir` keeps its files. */
function pgliteDirectory(dataDir: string): string {
  return resolve(dataDir, 'pglite')
}

/** Whether `dataDir` holds an embedded database already created (Postgres writes PG_VERSION when it creates one). */
export function hasEmbeddedDatabase(dataDir: string): boolean {
  return existsSync(join(pgliteDirectory(dataDir), 'PG_VERSION'))
}

async function openPglite(dataDir: string): Promise<EmbeddedDatabase> {
  // Loaded only here: a gateway on Postgres, and the main thread of an embedded one (PGlite runs
  // in the database worker), keep PGlite's code out of their memory.
  const [{ PGlite }, { drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([import('@electric-sql/pglite'), import('drizzle-orm/pglite'), import('drizzle-orm/pglite/migrator')])
  const directory = pgliteDirectory(dataDir)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const client = new PGlite(directory, { postgresqlconf: pgliteSettings })
  await client.waitReady
  const db = drizzlePglite({ client, schema })
  const writeUsageBatch = (batch: UsageBatch) => copyUsageBatch(client, batch)
  const database = buildDatabase('pglite', db, async (events, lastUsed) => writeUsageBatch(await usageBatch(events, lastUsed)), {
    migrate: () => migratePglite(db, { migrationsFolder }),
    close: () => client.close(),
    async copyOut(query, path) {
      const { blob } = await client.query(`COPY (${query}) TO '/dev/blob' WITH (FORMAT csv, HEADER)`)
      writeFileSync(path, Bun.gzipSync(new Uint8Array(await (blob ?? new Blob([])).arrayBuffer())), { flag: 'wx', mode: 0o600 })
    },
  }, client)
  return { ...database, kind: 'pglite', writeUsageBatch }
}

function openPostgres(databaseUrl: string, poolSize = defaultPoolSize, log?: (message: string) => void): Database {
  // No JIT: the gateway's statements are short, and compiling one costs more than running it
  // (about 50 ms at 10M usage rows, whatever the statement reads).
  const client = postgres(databaseUrl, { max: poolSize, backoff: reconnectBackoffS, onnotice: () => {}, connection: { application_name: 'nilegate', jit: 'off' } })
  const db = drizzlePostgres({ client, schema })
  const database = buildDatabase('postgres', db, (events, lastUsed) => insertUsageRows(db, events, lastUsed), {
    migrate: () => migratePostgresExclusively(databaseUrl),
    close: () => client.end({ timeout: 5 }),
    async copyOut(query, path) {
      const rows = await client.unsafe(`COPY (${query}) TO STDOUT WITH (FORMAT csv, HEADER)`).readable()
      await pipeline(rows, createGzip(), createWriteStream(path, { flags: 'wx', mode: 0o600 }))
    },
  })
  // A server that went away answers 503, and no statement or its parameters (key and session hashes
  // among them) reaches a log, whoever catches the error.
  const answering = answeringOutages(log)
  const governance = Object.fromEntries(Object.entries(database.governance).map(([area, store]) => [area, answering(store)])) as unknown as Governance
  const identities = database.identities
  const batchedIdentities = { ...identities, findApiKeyByHash: batchKeyLookups((hashesHex) => identities.findApiKeysByHashes(hashesHex)) }
  return { ...database, identities: answering(batchedIdentities), usage: answering(database.usage), ledger: answering(database.ledger), governance }
}

// A session-level advisory lock on a dedicated connection; ending the connection releases it.
async function migratePostgresExclusively(databaseUrl: string): Promise<void> {
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    await client`select pg_advisory_lock(${migrationLockKey})`
    await migratePostgres(drizzlePostgres({ client }), { migrationsFolder })
  } finally {
    await client.end({ timeout: 5 })
  }
}

function buildDatabase(kind: Database['kind'], db: Drizzle, writeUsage: UsageWriter, lifecycle: { migrate(): Promise<void>; close(): Promise<void>; copyOut: CopyOut }, pglite?: PGlite): Database {
  return {
    kind,
    drizzle: db,
    identities: createIdentityRepository(db, pglite),
    usage: createUsageRepository(writeUsage),
    ledger: createLedgerReader(db),
    governance: createGovernance(db),
    createDemoTenant: (options) => createDemoTenant(db, options),
    seedDemoIfEmpty: (options) => createDemoTenantIfEmpty(db, options),
    hasOrganizations: () => hasOrganizations(db),
    listBillingAccounts: () => listBillingAccounts(db),
    ledgerStatus: () => ledgerStatus(db),
    retainUsage: (options) => retainUsage(db, lifecycle.copyOut, options),
    migrate: lifecycle.migrate,
    close: lifecycle.close,
  }
}
