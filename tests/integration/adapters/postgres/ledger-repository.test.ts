import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { rowsOf } from '../../../../server/adapters/postgres/drizzle'
import { billingMonth } from '../../../../server/core/admission'
import { describeEachDatabase } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

describeEachDatabase('readCounters', (context) => {
  test('the balance is every credit minus every debit, to the micro-EGP', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 9_007_199_254_740_993n })
    await db.usage.insertUsageEvents([
      usageEvent({ orgId: tenant.organizationId, requestId: `req_a_${tenant.organizationId}`, costMicros: 7n }),
      usageEvent({ orgId: tenant.organizationId, requestId: `req_b_${tenant.organizationId}`, costMicros: 1_000_000n }),
    ])

    const counters = await db.ledger.readCounters(tenant.organizationId, '202605', 'Africa/Cairo')

    expect(counters.balanceMicros).toBe(9_007_199_254_740_993n - 1_000_007n)
  })

  test('month spends count the calendar month of the billing time zone, per key and per project', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    await db.usage.insertUsageEvents([
      // 23:30 on 31 May in Cairo (UTC+3) is still May there.
      usageEvent({ orgId: org, requestId: `req_may_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 5n, createdAt: new Date('2026-05-31T20:30:00Z') }),
      // 00:30 on 1 June in Cairo is June, although it is still 31 May in UTC.
      usageEvent({ orgId: org, requestId: `req_june_1_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 11n, createdAt: new Date('2026-05-31T21:30:00Z') }),
      usageEvent({ orgId: org, requestId: `req_june_2_${org}`, keyId: 'key_b', projectId: 'proj_a', costMicros: 13n, createdAt: new Date('2026-06-15T12:00:00Z') }),
      // A key's rows count for the project each names.
      usageEvent({ orgId: org, requestId: `req_june_3_${org}`, keyId: 'key_b', projectId: 'proj_b', costMicros: 17n, createdAt: new Date('2026-06-16T12:00:00Z') }),
      usageEvent({ orgId: 'org_someone_else', requestId: `req_other_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 1_000n, createdAt: new Date('2026-06-15T12:00:00Z') }),
    ])

    const june = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')

    expect(june.month).toBe('202606')
    expect(june.keySpend).toEqual(new Map([['key_a', 11n], ['key_b', 30n]]))
    expect(june.projectSpend).toEqual(new Map([['proj_a', 24n], ['proj_b', 17n]]))
  })

  test('a month of a zone whose offset is not whole hours starts between UTC hours (Asia/Kolkata, UTC+5:30)', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    // As if it had been created in Kolkata: its days are whole there.
    await db.drizzle.execute(sql`UPDATE organizations SET billing_time_zone = 'Asia/Kolkata' WHERE id = ${org}`)
    await db.drizzle.execute(sql`UPDATE organizations SET day_rollups_from = NULL WHERE id = ${org}`)
    const row = (name: string, iso: string, costMicros: bigint) => usageEvent({ orgId: org, requestId: `req_${name}_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros, createdAt: new Date(iso) })
    await db.usage.insertUsageEvents([
      // 23:59 on 31 May in Kolkata, then 00:00 and 00:14 on 1 June: one UTC hour holds both months.
      row('may', '2026-05-31T18:29:59Z', 1n),
      row('june_start', '2026-05-31T18:30:00Z', 10n),
      row('june_quarter', '2026-05-31T18:44:00Z', 100n),
      row('june_hour', '2026-05-31T19:00:00Z', 1_000n),
      // 23:59 on 30 June there, then 00:00 on 1 July.
      row('june_end', '2026-06-30T18:29:00Z', 10_000n),
      row('july', '2026-06-30T18:30:00Z', 100_000n),
    ])

    const spent = async (month: string) => (await db.ledger.readCounters(org, month, 'Asia/Kolkata')).keySpend.get('key_a')

    expect([await spent('202605'), await spent('202606'), await spent('202607')]).toEqual([1n, 11_110n, 100_000n])
  })

  test('month spends stay exact when the billing time zone changes: days before it are summed from hours and quarter-hours', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    const row = (name: string, iso: string, costMicros: bigint) => usageEvent({ orgId: org, requestId: `req_${name}_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros, createdAt: new Date(iso) })
    // Written while the zone is Cairo: the day rollups hold Cairo days.
    await db.usage.insertUsageEvents([row('cairo_june', '2026-06-10T10:00:00Z', 1n), row('kolkata_june_only', '2026-05-31T19:00:00Z', 10n)])
    await db.drizzle.execute(sql`UPDATE organizations SET billing_time_zone = 'Asia/Kolkata' WHERE id = ${org}`)
    // Written after the change, some of them late for days before it.
    await db.usage.insertUsageEvents([row('late', '2026-06-11T10:00:00Z', 100n), row('after', '2026-06-20T10:00:00Z', 1_000n)])
    const [{ from }] = rowsOf<{ from: string }>(await db.drizzle.execute(sql`SELECT day_rollups_from::text AS from FROM organizations WHERE id = ${org}`)) as [{ from: string }]

    const kolkata = await db.ledger.readCounters(org, '202606', 'Asia/Kolkata')
    const cairo = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')

    // The day rollups of the new zone count from its first midnight an hour or more after the change.
    expect(Date.parse(from)).toBeGreaterThan(Date.now())
    expect(kolkata.keySpend).toEqual(new Map([['key_a', 1_111n]]))
    // Asked in a zone that is no longer the organization's, days are summed from the hours as well;
    // 22:00 on 31 May in Cairo is May there.
    expect(cairo.keySpend).toEqual(new Map([['key_a', 1_101n]]))
  })

  test('usage rows are the ledger: updating, deleting or truncating them is refused, and so is writing into a partition', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000n })
    const org = tenant.organizationId
    await db.usage.insertUsageEvents([usageEvent({ orgId: org, requestId: `req_a_${org}`, costMicros: 10n, createdAt: new Date() })])
    const failure = (statement: Promise<unknown>) => statement.then(() => 'done', (error: Error) => ((error.cause as Error | undefined) ?? error).message)
    const [{ partition }] = rowsOf<{ partition: string }>(await db.drizzle.execute(sql`SELECT tableoid::regclass::text AS partition FROM usage_events WHERE org_id = ${org}`)) as [{ partition: string }]

    const refused = await Promise.all([
      failure(db.drizzle.execute(sql`UPDATE usage_events SET cost_micros = 1 WHERE org_id = ${org}`)),
      failure(db.drizzle.execute(sql`DELETE FROM usage_events WHERE org_id = ${org}`)),
      failure(db.drizzle.execute(sql`TRUNCATE usage_events`)),
      failure(db.drizzle.execute(sql.raw(`DELETE FROM ${partition}`))),
      failure(db.drizzle.execute(sql.raw(`INSERT INTO ${partition} (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, created_at)
        VALUES ('req_direct_${org}', '${org}', 'p', 'k', 'm', 'chat.completions', false, 1, 1, 5, 200, 1, now())`))),
    ])

    expect(refused).toEqual([
      expect.stringContaining('usage_events is the ledger'),
      expect.stringContaining('usage_events is the ledger'),
      expect.stringContaining('usage_events is the ledger'),
      expect.stringContaining('usage_events is the ledger'),
      expect.stringContaining(`not into its partition ${partition}`),
    ])
    expect((await db.ledger.readCounters(org, billingMonthNow(), 'Africa/Cairo')).balanceMicros).toBe(990n)
  })

  test('the balance and month spends read the sums kept with the rows whoever writes them: batches, a replayed batch, SQL by hand', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000_000n })
    const org = tenant.organizationId
    const at = (iso: string) => new Date(iso)
    const batch = [
      usageEvent({ orgId: org, requestId: `req_1_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 100n, createdAt: at('2026-06-10T10:01:00Z') }),
      usageEvent({ orgId: org, requestId: `req_2_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 200n, createdAt: at('2026-06-10T10:14:59Z') }),
      usageEvent({ orgId: org, requestId: `req_3_${org}`, keyId: 'key_b', projectId: 'proj_b', costMicros: 300n, createdAt: at('2026-06-10T10:15:00Z') }),
    ]
    await db.usage.insertUsageEvents(batch)
    // A write retried after it committed, with one new row.
    await db.usage.insertUsageEvents([...batch, usageEvent({ orgId: org, requestId: `req_4_${org}`, keyId: 'key_b', projectId: 'proj_a', costMicros: 400n, createdAt: at('2026-06-20T00:00:00Z') })])
    await db.drizzle.execute(sql`INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at)
      VALUES (${`req_5_${org}`}, ${org}, 'proj_a', 'key_c', 'm', 'chat.completions', false, 1, 1, 500, 200, 1, NULL, '2026-06-11T00:00:00Z')`)
    // 23:00 on 31 May in Cairo.
    await db.drizzle.execute(sql`INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at)
      VALUES (${`req_6_${org}`}, ${org}, 'proj_b', 'key_b', 'm', 'chat.completions', false, 1, 1, 150, 200, 1, NULL, '2026-05-31T20:00:00Z')`)

    const june = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')
    const may = await db.ledger.readCounters(org, '202605', 'Africa/Cairo')

    expect(june.balanceMicros).toBe(1_000_000n - 100n - 200n - 300n - 400n - 500n - 150n)
    expect([june.keySpend, june.projectSpend]).toEqual([new Map([['key_a', 300n], ['key_b', 700n], ['key_c', 500n]]), new Map([['proj_a', 1_200n], ['proj_b', 300n]])])
    expect([may.keySpend, may.projectSpend]).toEqual([new Map([['key_b', 150n]]), new Map([['proj_b', 150n]])])
  })

  test('a month runs to the start of the next in the zone: the last days of May and of March count (Cairo)', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    const row = (name: string, iso: string, costMicros: bigint) => usageEvent({ orgId: org, requestId: `req_${name}_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros, createdAt: new Date(iso) })
    await db.usage.insertUsageEvents([
      // 15:00 on 31 May in Cairo (UTC+3).
      row('may_31', '2026-05-31T12:00:00Z', 1n),
      // 14:00 on 29 March and 23:59:59 on 31 March in Cairo (UTC+2), then 00:00 on 1 April.
      row('march_29', '2026-03-29T12:00:00Z', 10n),
      row('march_31', '2026-03-31T21:59:59Z', 100n),
      row('april_1', '2026-03-31T22:00:00Z', 1_000n),
    ])

    const spent = async (month: string) => (await db.ledger.readCounters(org, month, 'Africa/Cairo')).keySpend.get('key_a')

    expect([await spent('202603'), await spent('202604'), await spent('202605')]).toEqual([110n, 1_000n, 1n])
  })

  test('answers which of the asked request ids have usage rows of the organization, in the same read', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000n })
    const org = tenant.organizationId
    await db.usage.insertUsageEvents([
      usageEvent({ orgId: org, requestId: `req_kept_${org}`, costMicros: 30n }),
      usageEvent({ orgId: 'org_someone_else', requestId: `req_theirs_${org}`, costMicros: 1n }),
    ])
    const asked = [`req_kept_${org}`, `req_missing_${org}`, `req_theirs_${org}`, "it's; not an id"]

    const counters = await db.ledger.readCounters(org, '202605', 'Africa/Cairo', asked)
    const unasked = await db.ledger.readCounters(org, '202605', 'Africa/Cairo')

    expect(counters.recordedIds).toEqual([`req_kept_${org}`])
    expect(counters.balanceMicros).toBe(970n)
    expect(unasked.recordedIds).toEqual([])
    expect(unasked.balanceMicros).toBe(970n)
  })

  test('answers about 100,000 request ids at once, more than a statement may have parameters', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000n })
    const org = tenant.organizationId
    await db.usage.insertUsageEvents([usageEvent({ orgId: org, requestId: `req_last_${org}`, costMicros: 1n })])
    const asked = [...Array.from({ length: 100_000 }, (_, i) => `req_${i}_${org}`), `req_last_${org}`]

    const counters = await db.ledger.readCounters(org, '202605', 'Africa/Cairo', asked)

    expect(counters.recordedIds).toEqual([`req_last_${org}`])
  })

  test('names its snapshot, after which readUsageAfter finds the rows written since a time, with their month in the zone', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000n })
    const org = tenant.organizationId
    const sinceMs = Date.parse('2026-05-31T20:00:00Z')
    const untilMs = sinceMs + 7_200_000
    await db.usage.insertUsageEvents([usageEvent({ orgId: org, requestId: `req_before_${org}`, costMicros: 3n, createdAt: new Date(sinceMs + 1_000) })])

    const { snapshot } = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')
    await db.usage.insertUsageEvents([
      // Written after the read: found, its month taken in Cairo (00:30 on 1 June there).
      usageEvent({ orgId: org, requestId: `req_late_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 5n, createdAt: new Date('2026-05-31T21:30:00Z') }),
      // Written after the read but created before `sinceMs` or from `untilMs` on, or another organization's: not asked for.
      usageEvent({ orgId: org, requestId: `req_older_${org}`, costMicros: 7n, createdAt: new Date(sinceMs - 1) }),
      usageEvent({ orgId: org, requestId: `req_newer_${org}`, costMicros: 7n, createdAt: new Date(untilMs) }),
      usageEvent({ orgId: 'org_someone_else', requestId: `req_theirs_${org}`, costMicros: 11n, createdAt: new Date(sinceMs + 1_000) }),
    ])

    expect(snapshot).toMatch(/^\d+:\d+:/)
    expect(await db.ledger.readUsageAfter(org, snapshot!, sinceMs, untilMs, 'Africa/Cairo')).toEqual([
      { requestId: `req_late_${org}`, keyId: 'key_a', projectId: 'proj_a', month: '202606', costMicros: 5n },
    ])
  })

  test('findUsageRows gives the rows of the asked ids that the snapshot did not hold, and the ids without a row', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000n })
    const org = tenant.organizationId
    await db.usage.insertUsageEvents([usageEvent({ orgId: org, requestId: `req_held_${org}`, costMicros: 3n, createdAt: new Date() })])

    const { snapshot } = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')
    await db.usage.insertUsageEvents([
      usageEvent({ orgId: org, requestId: `req_after_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 5n, createdAt: new Date('2026-05-31T21:30:00Z') }),
      usageEvent({ orgId: org, requestId: `req_not_asked_${org}`, costMicros: 7n, createdAt: new Date() }),
      // Another organization's row under an asked id is not this organization's.
      usageEvent({ orgId: 'org_someone_else', requestId: `req_theirs_${org}`, costMicros: 11n, createdAt: new Date() }),
    ])
    const asked = [`req_held_${org}`, `req_after_${org}`, `req_missing_${org}`, `req_theirs_${org}`]

    expect(await db.ledger.findUsageRows(org, snapshot!, asked, 'Africa/Cairo')).toEqual({
      after: [{ requestId: `req_after_${org}`, keyId: 'key_a', projectId: 'proj_a', month: '202606', costMicros: 5n }],
      missingIds: [`req_missing_${org}`, `req_theirs_${org}`],
    })
    expect(await db.ledger.findUsageRows(org, snapshot!, [], 'Africa/Cairo')).toEqual({ after: [], missingIds: [] })
  })

  if (context.kind === 'postgres') {
    test('a row whose transaction was still open during the read is found once it commits', async () => {
      const { db, databaseUrl } = context.current
      const tenant = await db.createDemoTenant({ balanceMicros: 1_000n })
      const org = tenant.organizationId
      const writer = postgres(databaseUrl!, { max: 1, onnotice: () => {} })
      try {
        const committed = writer.begin(async (tx) => {
          await tx`INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at)
            VALUES (${`req_open_${org}`}, ${org}, 'proj_a', 'key_a', 'm', 'chat.completions', false, 1, 1, 9, 200, 1, NULL, now())`
          // The read runs while this transaction is open; its row is not in the read's balance.
          const counters = await db.ledger.readCounters(org, '202605', 'Africa/Cairo')
          expect(counters.balanceMicros).toBe(1_000n)
          return counters.snapshot!
        })
        const snapshot = await committed

        expect((await db.ledger.readCounters(org, '202605', 'Africa/Cairo')).balanceMicros).toBe(991n)
        expect((await db.ledger.readUsageAfter(org, snapshot, Date.now() - 60_000, Date.now() + 60_000, 'Africa/Cairo')).map((row) => row.requestId)).toEqual([`req_open_${org}`])
      } finally {
        await writer.end()
      }
    })
  }

  if (context.kind === 'postgres') {
    test('a row whose transaction was open during a read is in the month spends of the reads after it commits', async () => {
      const { db, databaseUrl } = context.current
      const tenant = await db.createDemoTenant()
      const org = tenant.organizationId
      const writer = postgres(databaseUrl!, { max: 1, onnotice: () => {} })
      try {
        await writer.begin(async (tx) => {
          await tx`INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at)
            VALUES (${`req_open_${org}`}, ${org}, 'proj_a', 'key_a', 'm', 'chat.completions', false, 1, 1, 9, 200, 1, NULL, '2026-06-10T10:00:00Z')`
          expect((await db.ledger.readCounters(org, '202606', 'Africa/Cairo')).keySpend).toEqual(new Map())
        })

        expect((await db.ledger.readCounters(org, '202606', 'Africa/Cairo')).keySpend).toEqual(new Map([['key_a', 9n]]))
      } finally {
        await writer.end()
      }
    })
  }

  if (context.kind === 'postgres') {
    test('the sums stay exact when gateways write batches of one organization at once', async () => {
      const { db } = context.current
      const tenant = await db.createDemoTenant({ balanceMicros: 10_000_000n })
      const org = tenant.organizationId
      const keys = ['key_a', 'key_b', 'key_c', 'key_d']
      const batches = Array.from({ length: 12 }, (_, b) =>
        Array.from({ length: 50 }, (_, i) =>
          usageEvent({ orgId: org, requestId: `req_${b}_${i}_${org}`, keyId: keys[(b % 2 === 0 ? i : 3 * i) % 4]!, projectId: 'proj_a', costMicros: BigInt(1 + i), createdAt: new Date('2026-06-10T10:00:00Z') }),
        ).reverse(),
      )

      await Promise.all(batches.map((events) => db.usage.insertUsageEvents(events)))
      const counters = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')

      const perBatch = (50n * 51n) / 2n
      expect(counters.balanceMicros).toBe(10_000_000n - 12n * perBatch)
      expect([...counters.keySpend.values()].reduce((a, b) => a + b)).toBe(12n * perBatch)
      const [rollups] = rowsOf<{ quarters: string; hours: string; days: string }>(
        await db.drizzle.execute(sql`SELECT (SELECT SUM(cost_micros) FROM usage_rollup_quarters WHERE org_id = ${org})::text AS quarters,
          (SELECT SUM(cost_micros) FROM usage_rollup_hours WHERE org_id = ${org})::text AS hours, (SELECT SUM(cost_micros) FROM usage_rollup_days WHERE org_id = ${org})::text AS days`),
      )
      expect(rollups).toEqual({ quarters: String(12n * perBatch), hours: String(12n * perBatch), days: String(12n * perBatch) })
    })
  }
})

function billingMonthNow(): string {
  return billingMonth(Date.now(), 'Africa/Cairo')
}
