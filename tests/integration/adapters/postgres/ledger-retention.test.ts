import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { rowsOf } from '../../../../server/adapters/postgres/drizzle'
import { listUsagePartitions } from '../../../../server/adapters/postgres/ledger-partitions'
import { earliestRetainedMonthMs } from '../../../../server/adapters/postgres/ledger-retention'
import { billingMonth } from '../../../../server/core/admission'
import type { UsageQuery } from '../../../../server/core/governance/usage'
import { createTempDir, describeEachDatabase } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

describeEachDatabase('ledger retention', (context) => {
  test('old months leave with their partitions, older rows elsewhere are deleted, and no balance, spend or report moves by one micro-EGP', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 50_000_000n })
    const org = tenant.organizationId
    const row = (name: string, iso: string, costMicros: bigint, keyId = 'key_a') =>
      usageEvent({ orgId: org, requestId: `req_${name}_${org}`, keyId, projectId: 'proj_a', costMicros, createdAt: new Date(iso) })
    // Rows of months with no partition yet go to the default partition; creating the month's
    // partition then takes them from it.
    await db.usage.insertUsageEvents([
      row('2025', '2025-12-31T21:59:00Z', 1n),
      row('may', '2026-05-10T10:07:00Z', 10n),
      row('may_end', '2026-05-31T21:30:00Z', 100n, 'key_b'),
      row('june', '2026-06-15T23:59:59Z', 1_000n),
      row('now', new Date().toISOString(), 10_000n),
    ])
    await db.drizzle.execute(sql`SELECT nilegate_create_usage_month(month::date) FROM (VALUES ('2026-05-01'), ('2026-06-01')) AS months (month)`)
    const report = (overrides: Partial<UsageQuery> = {}) =>
      db.governance.usage.usageBuckets({
        orgId: org, timeZone: 'Africa/Cairo', startTime: Date.parse('2026-05-10T10:05:00Z') / 1000, endTime: Date.parse('2026-06-20T00:00:00Z') / 1000,
        bucketWidth: '1d', limit: 31, groupBy: ['api_key_id'], endpoint: null, projectIds: null, apiKeyIds: null, models: null, ...overrides,
      })
    const counters = async (month: string) => {
      const { balanceMicros, keySpend, projectSpend } = await db.ledger.readCounters(org, month, 'Africa/Cairo')
      return { balanceMicros, keySpend, projectSpend }
    }
    const books = async () => ({
      may: await counters('202605'),
      june: await counters('202606'),
      now: await counters(billingMonth(Date.now(), 'Africa/Cairo')),
      days: (await report()).buckets,
      nextDays: (await report({ startTime: Date.parse('2026-06-19T21:00:00Z') / 1000, endTime: Date.parse('2026-07-20T00:00:00Z') / 1000 })).buckets,
      hours: (await report({ bucketWidth: '1h', limit: 168 })).buckets,
    })
    const rawRows = async () => rowsOf<{ id: string }>(await db.drizzle.execute(sql`SELECT request_id AS id FROM usage_events WHERE org_id = ${org} ORDER BY created_at`)).map((found) => found.id)
    const before = await books()
    const archive = createTempDir('ledger-archive')

    try {
      const dryRun = await db.retainUsage({ beforeMs: Date.UTC(2026, 6, 1), dryRun: true, archiveDir: archive.path })
      const rowsAfterDryRun = await rawRows()
      const run = await db.retainUsage({ beforeMs: Date.UTC(2026, 6, 1), dryRun: false, archiveDir: archive.path })

      expect(dryRun.parts.map(({ partition, action, rows }) => [partition, action, rows])).toEqual([
        ['usage_events_y2026m05', 'drop', 2],
        ['usage_events_y2026m06', 'drop', 1],
        ['usage_events_default', 'delete', 1],
      ])
      expect(rowsAfterDryRun).toHaveLength(5)
      expect(run.parts.map(({ partition, action, rows }) => [partition, action, rows])).toEqual(dryRun.parts.map(({ partition, action, rows }) => [partition, action, rows]))
      expect(await rawRows()).toEqual([`req_now_${org}`])
      expect((await listUsagePartitions(db.drizzle)).map((partition) => partition.name)).not.toContain('usage_events_y2026m05')
      expect(await books()).toEqual(before)
      expect((await report()).rawFrom).toBe(Date.UTC(2026, 6, 1) / 1000)
      // What left is in the archive, as CSV with a header.
      const archived = new TextDecoder().decode(Bun.gunzipSync(readFileSync(join(archive.path, 'usage_events_y2026m05.csv.gz'))))
      expect(archived.split('\n').filter(Boolean).map((line) => line.split(',')[0])).toEqual(['request_id', `req_may_${org}`, `req_may_end_${org}`])
    } finally {
      archive.remove()
    }

    // A late row of a month whose raw rows are gone is still summed (it lands in the default partition).
    await db.usage.insertUsageEvents([row('late_may', '2026-05-20T10:00:00Z', 100_000n)])
    expect((await db.ledger.readCounters(org, '202605', 'Africa/Cairo')).keySpend).toEqual(new Map([['key_a', 100_010n]]))
  })

  test('the current and the previous month always stay; the cutoff is the start of a month', async () => {
    const { db } = context.current
    const latest = earliestRetainedMonthMs(Date.now())
    const next = new Date(latest)
    next.setUTCMonth(next.getUTCMonth() + 1)

    const refusals = await Promise.all(
      [next.getTime(), Date.UTC(2026, 0, 15)].map((beforeMs) => db.retainUsage({ beforeMs, dryRun: true, archiveDir: null }).then(() => 'done', (error: Error) => error.message)),
    )
    const allowed = await db.retainUsage({ beforeMs: latest, dryRun: true, archiveDir: null })

    expect(refusals).toEqual([expect.stringContaining('raw rows of the current and the previous month stay'), 'the cutoff must be the start of a month (UTC)'])
    expect(allowed.dryRun).toBe(true)
  })
})
