import { afterEach, expect, test } from 'bun:test'
import { cpSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { sql } from 'drizzle-orm'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { openDatabase, type Database } from '../../../../server/adapters/postgres/database'
import { rowsOf } from '../../../../server/adapters/postgres/drizzle'
import { listUsagePartitions } from '../../../../server/adapters/postgres/ledger-partitions'
import journal from '../../../../server/adapters/postgres/migrations/meta/_journal.json'
import { createPostgresDatabase, createTempDir, databaseKinds, slowHookTimeoutMs } from '../../../support/databases'

const migrationsFolder = join(import.meta.dir, '../../../../server/adapters/postgres/migrations')

/** A copy of the migrations folder that ends with `lastTag`: what an older release shipped. */
function migrationsUpTo(lastTag: string, into: string): string {
  const entries = journal.entries.slice(0, journal.entries.findIndex((entry) => entry.tag === lastTag) + 1)
  mkdirSync(join(into, 'meta'), { recursive: true })
  for (const entry of entries) cpSync(join(migrationsFolder, `${entry.tag}.sql`), join(into, `${entry.tag}.sql`))
  writeFileSync(join(into, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }))
  return into
}

type Execute = (statement: string) => Promise<unknown>

/** Opens the database as an older release would, migrated up to `lastTag`, runs `work`, closes it. */
async function asOlderRelease(kind: string, where: { url: string | null; dataDir: string }, lastTag: string, work: (execute: Execute) => Promise<void>) {
  const folder = migrationsUpTo(lastTag, join(where.dataDir, `migrations-${lastTag}`))
  if (kind === 'pglite') {
    mkdirSync(join(where.dataDir, 'pglite'), { recursive: true })
    const client = new PGlite(join(where.dataDir, 'pglite'))
    try {
      await migratePglite(drizzlePglite({ client }), { migrationsFolder: folder })
      await work((statement) => client.exec(statement))
    } finally {
      await client.close()
    }
  } else {
    const client = postgres(where.url!, { max: 1, onnotice: () => {} })
    try {
      await migratePostgres(drizzlePostgres({ client }), { migrationsFolder: folder })
      await work((statement) => client.unsafe(statement))
    } finally {
      await client.end({ timeout: 5 })
    }
  }
}

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const insertRow = (id: string, org: string, key: string, cost: number, at: string) =>
  `INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at)
   VALUES ('${id}', '${org}', 'proj_a', '${key}', 'm', 'chat.completions', false, 10, 20, ${cost}, 200, 1, NULL, '${at}')`

for (const kind of databaseKinds) {
  test(
    `[${kind}] a ledger of an older release becomes the partition of the months it holds, with its sums, and balances, spends and reports do not move`,
    async () => {
      const dataDir = createTempDir('ledger-migration')
      cleanups.push(() => dataDir.remove())
      const server = kind === 'postgres' ? await createPostgresDatabase() : null
      if (server) cleanups.push(() => server.drop())
      const where = { url: server?.url ?? null, dataDir: dataDir.path }
      const org = 'org_migrated'
      const thisMonth = new Date().toISOString().slice(0, 7)
      // Rows from before the daily sums (0004), then written through the triggers of 0005 and 0006.
      await asOlderRelease(kind, where, '0004_usage_inserted_xid', async (execute) => {
        await execute(`INSERT INTO organizations (id, name, balance_micros) VALUES ('${org}', 'Migrated', 0)`)
        await execute(`INSERT INTO credit_transactions (id, org_id, amount_micros, kind) VALUES ('ct_1', '${org}', 1000000, 'top_up')`)
        await execute(insertRow('req_old_1', org, 'key_a', 100, '2026-03-31T22:30:00Z'))
        await execute(insertRow('req_old_2', org, 'key_b', 200, '2026-04-15T10:07:00Z'))
      })
      await asOlderRelease(kind, where, '0009_password_resets', async (execute) => {
        await execute(insertRow('req_old_3', org, 'key_a', 400, '2026-04-15T10:52:00Z'))
        await execute(insertRow('req_old_4', org, 'key_a', 800, `${thisMonth}-01T12:00:00Z`))
      })

      const db: Database = await openDatabase({ databaseUrl: where.url, dataDir: where.dataDir })
      cleanups.push(() => db.close())
      await db.usage.insertUsageEvents([
        { requestId: 'req_new_1', orgId: org, projectId: 'proj_a', keyId: 'key_b', model: 'm', endpoint: 'chat.completions', stream: false, promptTokens: 1, completionTokens: 2, costMicros: 1_600n, status: 200, latencyMs: 1, region: null, createdAt: new Date(`${thisMonth}-01T13:00:00Z`) },
      ])
      // A replay of a row the older release wrote inserts nothing.
      await db.drizzle.execute(sql.raw(`${insertRow('req_old_4', org, 'key_a', 800, `${thisMonth}-01T12:00:00Z`)} ON CONFLICT DO NOTHING`))

      const april = await db.ledger.readCounters(org, '202604', 'Africa/Cairo')
      const report = await db.governance.usage.usageBuckets({
        orgId: org, timeZone: 'Africa/Cairo', startTime: Date.parse('2026-03-31T22:00:00Z') / 1000, endTime: Date.parse('2026-05-01T00:00:00Z') / 1000,
        bucketWidth: '1d', limit: 31, groupBy: ['api_key_id'], endpoint: null, projectIds: null, apiKeyIds: null, models: null,
      })
      const partitions = await listUsagePartitions(db.drizzle)
      const [{ rows }] = rowsOf<{ rows: number }>(await db.drizzle.execute(sql`SELECT count(*)::int AS rows FROM usage_events WHERE org_id = ${org}`)) as [{ rows: number }]

      // 00:30 on 1 April in Cairo (UTC+2) is April's, although it is 31 March in UTC.
      expect(april.balanceMicros).toBe(1_000_000n - 100n - 200n - 400n - 800n - 1_600n)
      expect(april.keySpend).toEqual(new Map([['key_a', 500n], ['key_b', 200n]]))
      expect(report.buckets.filter((bucket) => bucket.results.length > 0).map((bucket) => [new Date(bucket.startTime * 1000).toISOString(), bucket.results.map((line) => [line.apiKeyId, line.costMicros, line.requests])])).toEqual([
        ['2026-03-31T22:00:00.000Z', [['key_a', 100n, 1]]],
        ['2026-04-14T22:00:00.000Z', [['key_a', 400n, 1], ['key_b', 200n, 1]]],
      ])
      expect(rows).toBe(5)
      // The old table holds everything up to the month after this one; months after it have their own.
      const legacy = partitions.find((partition) => partition.name === 'usage_events_legacy')
      const nextMonth = new Date(`${thisMonth}-01T00:00:00Z`)
      nextMonth.setUTCMonth(nextMonth.getUTCMonth() + 1)
      expect(legacy).toMatchObject({ fromMs: null, untilMs: nextMonth.getTime(), isDefault: false })
      expect(partitions.at(-1)?.isDefault).toBe(true)
      expect(partitions.filter((partition) => !partition.isDefault && partition.name !== 'usage_events_legacy').map((partition) => partition.fromMs)).toHaveLength(3)
    },
    slowHookTimeoutMs,
  )
}
