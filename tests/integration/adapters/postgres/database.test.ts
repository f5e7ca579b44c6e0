import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { openDatabase, seedDemoIfEmpty, type Database } from '../../../../server/adapters/postgres/database'
import journal from '../../../../server/adapters/postgres/migrations/meta/_journal.json'
import { describeEachDatabase } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

const migrationCount = journal.entries.length

describeEachDatabase('openDatabase', (context) => {
  test('seeds exactly one demo tenant on an empty database, even when asked concurrently', async () => {
    const { db } = context.current
    const before = await db.hasOrganizations()

    const seeded = await Promise.all([seedDemoIfEmpty(db), seedDemoIfEmpty(db), seedDemoIfEmpty(db)])

    expect(before).toBe(false)
    expect(seeded.filter((tenant) => tenant !== null)).toHaveLength(1)
    expect(await db.hasOrganizations()).toBe(true)
  })

  test('seeds nothing once an organization exists', async () => {
    const { db } = context.current
    await db.createDemoTenant()

    expect(await seedDemoIfEmpty(db)).toBeNull()
  })

  test('applies each migration once; re-running them changes nothing', async () => {
    const { db } = context.current
    const tablesBefore = await countPublicTables(db)

    await db.migrate()
    await db.migrate()

    expect(await countAppliedMigrations(db)).toBe(migrationCount)
    expect(await countPublicTables(db)).toBe(tablesBefore)
    // 7 of the inference core, 7 of governance (migration 0001), deployments (0002), usage totals
    // (0005), spend checkpoints and usage epochs (0006), password resets (0009).
    expect(tablesBefore).toBe(19)
  })

  test('the usage totals migration sums the rows written before it, and the triggers carry on from there; 0006 keeps an index built before it', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 10_000n })
    const org = tenant.organizationId
    const row = (name: string, costMicros: bigint, createdAt: string) => usageEvent({ orgId: org, requestId: `req_${name}_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros, createdAt: new Date(createdAt) })
    await db.usage.insertUsageEvents([row('a', 10n, '2026-06-01T10:00:00Z'), row('b', 20n, '2026-06-01T10:05:00Z')])
    // The database as it was before migration 0005 (and 0006 to 0009), with its rows; the index of 0006
    // built beforehand by hand, as an operator with a large ledger does.
    const totals = journal.entries.find((entry) => entry.tag === '0005_usage_totals')!
    await db.drizzle.execute(sql`DROP TABLE usage_totals, spend_checkpoints, usage_epochs`)
    await db.drizzle.execute(sql`DROP FUNCTION nilegate_add_usage_totals() CASCADE`)
    await db.drizzle.execute(sql`DROP FUNCTION nilegate_count_usage_changes() CASCADE`)
    await db.drizzle.execute(sql`DROP FUNCTION nilegate_forget_usage_sums() CASCADE`)
    // Drizzle applies only migrations newer than the last applied one: every later migration is
    // undone too, and applied again after them.
    await db.drizzle.execute(sql`ALTER TABLE deployments DROP COLUMN developer_role`)
    await db.drizzle.execute(sql`ALTER TABLE usage_events DROP COLUMN unbilled_prompt_tokens, DROP COLUMN unbilled_completion_tokens, DROP COLUMN unbilled_micros`)
    await db.drizzle.execute(sql`DROP TABLE password_resets`)
    await db.drizzle.execute(sql`DELETE FROM drizzle.__drizzle_migrations WHERE created_at >= ${totals.when}`)

    await db.migrate()
    await db.usage.insertUsageEvents([row('c', 40n, '2026-06-01T10:10:00Z')])

    expect((await db.ledger.readCounters(org, '202606', 'Africa/Cairo')).balanceMicros).toBe(10_000n - 70n)
    expect(await countAppliedMigrations(db)).toBe(migrationCount)
  })

  if (context.kind === 'postgres') {
    test('gateways opening one Postgres database together all succeed', async () => {
      const { databaseUrl, dataDir } = context.current

      const opened = await Promise.all([1, 2, 3].map(() => openDatabase({ databaseUrl, dataDir, poolSize: 2 })))
      await Promise.all(opened.map((db) => db.close()))

      expect(await countAppliedMigrations(context.current.db)).toBe(migrationCount)
    })
  }
})

async function countAppliedMigrations(db: Database): Promise<number> {
  const [row] = await db.drizzle.select({ count: sql<number>`count(*)::int` }).from(sql`drizzle.__drizzle_migrations`)
  return row!.count
}

async function countPublicTables(db: Database): Promise<number> {
  const [row] = await db.drizzle
    .select({ count: sql<number>`count(*)::int` })
    .from(sql`information_schema.tables`)
    .where(sql`table_schema = 'public'`)
  return row!.count
}
