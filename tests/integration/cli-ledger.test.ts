import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { openDatabase } from '../../server/adapters/postgres/database'
import { rowsOf } from '../../server/adapters/postgres/drizzle'
import { startControlSocket } from '../../server/control-socket'
import { acquireDataDirLock } from '../../server/data-dir-lock'
import { createMigratedPgliteDir, openTestDatabase, slowHookTimeoutMs, type TestDatabase } from '../support/databases'
import { childEnv, runBun } from '../support/processes'
import { usageEvent } from '../support/usage-events'

const ledgerCommand = ['server/cli.ts', 'ledger']

describe('bun server/cli.ts ledger, on Postgres (DATABASE_URL)', () => {
  let database: TestDatabase

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
  }, slowHookTimeoutMs)
  afterAll(() => database?.dispose(), slowHookTimeoutMs)

  const env = () => childEnv({ DATABASE_URL: database.databaseUrl!, DATA_DIR: database.dataDir })

  test('status lists the partitions; retain says what it would remove, removes it, and the balance stays', async () => {
    const { db } = database
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000_000n })
    await db.usage.insertUsageEvents([usageEvent({ orgId: tenant.organizationId, costMicros: 7n, createdAt: new Date('2025-03-03T03:03:03Z') })])
    const balance = async () => (await db.ledger.readCounters(tenant.organizationId, '202503', 'Africa/Cairo')).balanceMicros

    const status = await runBun([...ledgerCommand, 'status'], env())
    const dryRun = await runBun([...ledgerCommand, 'retain', '--before', '2025-06', '--dry-run'], env())
    const rowsAfterDryRun = rowsOf(await db.drizzle.execute(sql`SELECT FROM usage_events WHERE org_id = ${tenant.organizationId}`)).length
    const run = await runBun([...ledgerCommand, 'retain', '--before', '2025-06'], env())
    const again = await runBun([...ledgerCommand, 'retain', '--before=2025-06'], env())

    expect([status.code, status.stderr]).toEqual([0, ''])
    expect(status.stdout).toContain('usage_events_default')
    expect(status.stdout).toContain('Raw usage rows are kept from the start.')
    expect([dryRun.code, dryRun.stdout]).toEqual([
      0,
      'Dry run: would remove 1 raw usage rows created before 2025-06:\n  usage_events_default: 1 rows, rows before 2025-06 deleted\nBalances, month spends, caps and reports would not change; raw rows are kept from 2025-06.\n',
    ])
    expect(rowsAfterDryRun).toBe(1)
    expect([run.code, run.stdout]).toEqual([
      0,
      'removed 1 raw usage rows created before 2025-06:\n  usage_events_default: 1 rows, rows before 2025-06 deleted\nBalances, month spends, caps and reports did not change; raw rows are kept from 2025-06.\nDeleted rows free their space once VACUUM has run on those partitions.\n',
    ])
    expect([again.code, again.stdout]).toEqual([0, 'Nothing to remove: no raw usage rows before 2025-06.\n'])
    expect(await balance()).toBe(1_000_000n - 7n)
  })

  test('a month too recent, a malformed one or a missing one is refused, naming what is wrong', async () => {
    const recent = await runBun([...ledgerCommand, 'retain', '--before', new Date().toISOString().slice(0, 7)], env())
    const malformed = await runBun([...ledgerCommand, 'retain', '--before', '2025-13'], env())
    const missing = await runBun([...ledgerCommand, 'retain'], env())
    const unknown = await runBun([...ledgerCommand, 'purge'], env())

    expect([recent.code, recent.stderr]).toEqual([1, expect.stringContaining('raw rows of the current and the previous month stay; the latest cutoff now is')])
    expect([malformed.code, malformed.stderr]).toEqual([2, expect.stringContaining('--before takes a month as YYYY-MM; got "2025-13"')])
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('--before takes a month as YYYY-MM; got nothing')])
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining('ledger takes status or retain; got "purge"')])
  })
})

describe('bun server/cli.ts ledger, embedded', () => {
  test('works through the control socket of a gateway that holds the database', async () => {
    const dataDir = await createMigratedPgliteDir()
    const lock = acquireDataDirLock(dataDir.path)
    const db = await openDatabase({ databaseUrl: null, dataDir: dataDir.path })
    const socket = startControlSocket(dataDir.path, {
      createDemo: () => Promise.reject(new Error('not asked for')),
      setOperator: () => Promise.reject(new Error('not asked for')),
      ledgerStatus: () => db.ledgerStatus(),
      retainUsage: (options) => db.retainUsage(options),
    })
    try {
      const env = childEnv({ DATA_DIR: dataDir.path })

      const status = await runBun([...ledgerCommand, 'status'], env)
      const dryRun = await runBun([...ledgerCommand, 'retain', '--before', '2025-06', '--dry-run'], env)

      expect([status.code, status.stderr]).toEqual([0, ''])
      expect(status.stdout).toContain('usage_events_default')
      expect([dryRun.code, dryRun.stdout]).toEqual([0, 'Nothing to remove: no raw usage rows before 2025-06.\n'])
    } finally {
      await socket.stop()
      await db.close()
      lock.release()
      dataDir.remove()
    }
  }, slowHookTimeoutMs)
})
