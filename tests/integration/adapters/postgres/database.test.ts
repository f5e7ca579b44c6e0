import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { openDatabase, seedDemoIfEmpty, type Database } from '../../../../server/adapters/postgres/database'
import { rowsOf } from '../../../../server/adapters/postgres/drizzle'
import journal from '../../../../server/adapters/postgres/migrations/meta/_journal.json'
import { describeEachDatabase } from '../../../support/databases'

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
    // (0005), password resets (0009), three usage rollups and the retention mark (0010); the
    // partitions of usage_events apart.
    expect(tablesBefore).toBe(21)
  })

  if (context.kind === 'pglite') {
    test('the embedded Postgres runs with its settings: 16 MB of shared buffers, which it zeroes at start, not 128', async () => {
      const [row] = rowsOf<{ shared_buffers: string }>(await context.current.db.drizzle.execute(sql`SHOW shared_buffers`))

      expect(row?.shared_buffers).toBe('16MB')
    })
  }

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
    .from(sql`pg_class`)
    .where(sql`relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition`)
  return row!.count
}
