import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openDatabase, type Database } from '../../../../server/adapters/postgres/database'
import { billingMonth } from '../../../../server/core/admission'
import { createPostgresDatabase, createTempDir, openTestDatabase, slowHookTimeoutMs, type TestDatabase } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

async function run(command: string[]): Promise<void> {
  const child = Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe' })
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()])
  if (code !== 0) throw new Error(`${command[0]} exited with ${code}: ${stderr}`)
}

describe('a ledger restored from pg_dump into another database', () => {
  let source: TestDatabase
  let target: Awaited<ReturnType<typeof createPostgresDatabase>>
  let restored: Database
  const dumpDir = createTempDir('ledger-dump')
  let org = ''
  const month = billingMonth(Date.now(), 'Africa/Cairo')

  beforeAll(async () => {
    source = await openTestDatabase('postgres')
    const tenant = await source.db.createDemoTenant({ balanceMicros: 5_000_000n })
    org = tenant.organizationId
    await source.db.drizzle.execute(sql`SELECT nilegate_create_usage_month('2026-06-01')`)
    await source.db.usage.insertUsageEvents([
      usageEvent({ orgId: org, requestId: `req_june_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 10n, createdAt: new Date('2026-06-10T10:00:00Z') }),
      usageEvent({ orgId: org, requestId: `req_now_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 100n, createdAt: new Date(Date.now() - 60_000) }),
    ])
    const dump = join(dumpDir.path, 'ledger.dump')
    await run(['pg_dump', '--format=custom', `--file=${dump}`, source.databaseUrl!])
    target = await createPostgresDatabase()
    await run(['pg_restore', '--no-owner', `--dbname=${target.url}`, dump])
    restored = await openDatabase({ databaseUrl: target.url, dataDir: dumpDir.path })
  }, slowHookTimeoutMs)

  afterAll(async () => {
    await restored?.close()
    await target?.drop()
    await source?.dispose()
    dumpDir.remove()
  }, slowHookTimeoutMs)

  test('gives the same balance, spends and reports, with no step of its own', async () => {
    const counters = async (db: Database, asked: string) => {
      const { balanceMicros, keySpend, recordedIds } = await db.ledger.readCounters(org, asked, 'Africa/Cairo', [`req_june_${org}`, `req_now_${org}`])
      return { balanceMicros, keySpend, recordedIds: recordedIds.sort() }
    }
    const report = (db: Database) =>
      db.governance.usage.usageBuckets({
        orgId: org, timeZone: 'Africa/Cairo', startTime: Date.parse('2026-06-01T00:00:00Z') / 1000, endTime: Math.floor(Date.now() / 1000), bucketWidth: '1d', limit: 31,
        groupBy: ['api_key_id'], endpoint: null, projectIds: null, apiKeyIds: null, models: null,
      })

    expect(await counters(restored, month)).toEqual(await counters(source.db, month))
    expect(await counters(restored, '202606')).toEqual({ balanceMicros: 5_000_000n - 110n, keySpend: new Map([['key_a', 10n]]), recordedIds: [`req_june_${org}`, `req_now_${org}`].sort() })
    expect(await report(restored)).toEqual(await report(source.db))
  })

  test('the restored rows count as written before every snapshot taken since; rows written after count once', async () => {
    const { snapshot } = await restored.ledger.readCounters(org, month, 'Africa/Cairo')
    const sinceMs = Date.parse('2026-06-01T00:00:00Z')
    const untilMs = Date.now() + 60_000
    const before = await restored.ledger.readUsageAfter(org, snapshot!, sinceMs, untilMs, 'Africa/Cairo')
    await restored.usage.insertUsageEvents([usageEvent({ orgId: org, requestId: `req_after_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 1_000n, createdAt: new Date() })])

    const after = await restored.ledger.readUsageAfter(org, snapshot!, sinceMs, untilMs, 'Africa/Cairo')
    const found = await restored.ledger.findUsageRows(org, snapshot!, [`req_june_${org}`, `req_now_${org}`, `req_after_${org}`], 'Africa/Cairo')

    expect(before).toEqual([])
    expect(after.map((row) => row.requestId)).toEqual([`req_after_${org}`])
    expect(found.after.map((row) => row.requestId)).toEqual([`req_after_${org}`])
    expect((await restored.ledger.readCounters(org, month, 'Africa/Cairo')).balanceMicros).toBe(5_000_000n - 1_110n)
    // The refusals came back with the triggers.
    expect(await restored.drizzle.execute(sql`DELETE FROM usage_events WHERE org_id = ${org}`).then(() => 'deleted', () => 'refused')).toBe('refused')
  })
})
