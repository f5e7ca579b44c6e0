import { afterAll, beforeAll, expect } from 'bun:test'
import postgres from 'postgres'
import { RedisAdmissionStore } from '../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis, type RedisClient } from '../../server/adapters/redis/client'
import { billingMonth, defaultBillingTimeZone, type OrgSnapshot } from '../../server/core/admission'
import { hashApiKey } from '../../server/core/api-keys'
import { createPostgresDatabase } from '../support/databases'
import { childEnv, runBun } from '../support/processes'
import { teardown, writeFaultCatalog } from './fault-scenario'

/** What `bun server/cli.ts reconcile --json` printed for one organization. */
export interface ReconcileLine {
  organization_id: string
  month: string
  outcome: 'rebuilt' | 'repaired' | 'in_step' | 'absent'
  balance_drift_micros: string
  key_drift_micros: Record<string, string>
  project_drift_micros: Record<string, string>
  released_holds: number
}

/**
 * Both sets of books a fault may pull apart: the Postgres ledger (credits and usage rows) and the
 * admission counters in Redis, read directly (never through a test's proxy).
 */
export class BillingBooks {
  private constructor(
    private readonly databaseUrl: string,
    private readonly redisUrl: string,
    private readonly sql: postgres.Sql,
    private readonly redis: RedisClient,
    private readonly store: RedisAdmissionStore,
  ) {}

  static async open(databaseUrl: string, redisUrl: string): Promise<BillingBooks> {
    const redis = createRedisClient(redisUrl, { log: () => {} })
    await waitForRedis(redis, 5_000)
    return new BillingBooks(databaseUrl, redisUrl, postgres(databaseUrl, { max: 2, onnotice: () => {} }), redis, new RedisAdmissionStore(redis))
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 5 })
    this.redis.destroy()
  }

  async orgOf(apiKey: string): Promise<string> {
    const [row] = await this.sql<Array<{ org_id: string }>>`select org_id from api_keys where secret_hash = ${hashApiKey(apiKey)}`
    if (!row) throw new Error('no such API key in the database')
    return row.org_id
  }

  /** The organization's credits, its debits (usage rows) and the request ids they were recorded under. */
  async ledger(orgId: string): Promise<{ creditMicros: bigint; debitMicros: bigint; requestIds: string[] }> {
    const [credit] = await this.sql<Array<{ total: string }>>`select coalesce(sum(amount_micros), 0)::text as total from credit_transactions where org_id = ${orgId}`
    const rows = await this.sql<Array<{ request_id: string; cost_micros: string }>>`select request_id, cost_micros::text from usage_events where org_id = ${orgId} order by request_id`
    let debitMicros = 0n
    for (const row of rows) debitMicros += BigInt(row.cost_micros)
    return { creditMicros: BigInt(credit!.total), debitMicros, requestIds: rows.map((row) => row.request_id) }
  }

  /** The organization's admission counters of this month, or null when none are loaded. */
  counters(orgId: string): Promise<OrgSnapshot | null> {
    return this.store.snapshot(orgId, billingMonth(Date.now(), defaultBillingTimeZone))
  }

  /** Runs the reconcile command (Redis counters against this ledger); its lines by organization. */
  async reconcile(options: { dryRun?: boolean } = {}): Promise<Map<string, ReconcileLine>> {
    const args = ['server/cli.ts', 'reconcile', '--json', ...(options.dryRun ? ['--dry-run'] : [])]
    const { code, stdout, stderr } = await runBun(args, childEnv({ DATABASE_URL: this.databaseUrl, REDIS_URL: this.redisUrl }), 30_000)
    if (code !== 0) throw new Error(`reconcile exited with ${code}:\n${stdout}${stderr}`)
    const lines = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as ReconcileLine)
    return new Map(lines.map((line) => [line.organization_id, line]))
  }
}

/** Asserts the two books agree for `orgId`: counters loaded, no open hold, balance = credits - ledger. */
export async function expectBooksBalanced(books: BillingBooks, orgId: string): Promise<void> {
  const [counters, ledger] = await Promise.all([books.counters(orgId), books.ledger(orgId)])
  expect({ balanceMicros: counters?.balanceMicros, heldMicros: counters?.heldMicros }).toEqual({ balanceMicros: ledger.creditMicros - ledger.debitMicros, heldMicros: 0n })
}

/**
 * The hooks of a fault file: the fault catalog is written first and removed last. Read `path`
 * inside hooks and tests.
 */
export function useFaultCatalog(): { readonly path: string } {
  let catalog: Awaited<ReturnType<typeof writeFaultCatalog>> | null = null
  beforeAll(async () => {
    catalog = await writeFaultCatalog()
  })
  afterAll(() => {
    catalog?.remove()
  })
  return {
    get path() {
      if (!catalog) throw new Error('the fault catalog is not written yet')
      return catalog.path
    },
  }
}

/** A scratch Postgres database and the books on it and on `redisUrl`; `cleanup` closes and drops them. */
export async function openScratchBooks(cleanup: ReturnType<typeof teardown>, redisUrl: string): Promise<{ databaseUrl: string; books: BillingBooks }> {
  const database = await createPostgresDatabase()
  cleanup.push(() => database.drop())
  const books = await BillingBooks.open(database.url, redisUrl)
  cleanup.push(() => books.close())
  return { databaseUrl: database.url, books }
}
