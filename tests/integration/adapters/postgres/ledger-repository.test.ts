import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { rowsOf } from '../../../../server/adapters/postgres/drizzle'
import { createLedgerReader } from '../../../../server/adapters/postgres/ledger-repository'
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

  test('a read keeps its month spends as a checkpoint; the next adds only the rows written since, until an operator changes rows', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    const row = (name: string, keyId: string, projectId: string, costMicros: bigint, iso = '2026-06-10T10:00:00Z') =>
      usageEvent({ orgId: org, requestId: `req_${name}_${org}`, keyId, projectId, costMicros, createdAt: new Date(iso) })
    await db.usage.insertUsageEvents([row('a', 'key_a', 'proj_a', 5n), row('b', 'key_b', 'proj_a', 7n)])
    await db.ledger.readCounters(org, '202606', 'Africa/Cairo')
    // What the next read takes from the checkpoint shows: 1,000 more on key_a than its rows hold.
    await db.drizzle.execute(sql`UPDATE spend_checkpoints SET spends = '[["key_a", "proj_a", "1005"], ["key_b", "proj_a", "7"]]' WHERE org_id = ${org}`)
    await db.usage.insertUsageEvents([row('c', 'key_a', 'proj_b', 11n), row('may', 'key_a', 'proj_a', 13n, '2026-05-20T10:00:00Z')])

    const fromCheckpoint = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')
    await db.drizzle.execute(sql`UPDATE usage_events SET cost_micros = 6 WHERE request_id = ${`req_a_${org}`}`)
    const afterCorrection = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')

    expect([fromCheckpoint.keySpend, fromCheckpoint.projectSpend]).toEqual([new Map([['key_a', 1_016n], ['key_b', 7n]]), new Map([['proj_a', 1_012n], ['proj_b', 11n]])])
    expect([afterCorrection.keySpend, afterCorrection.projectSpend]).toEqual([new Map([['key_a', 17n], ['key_b', 7n]]), new Map([['proj_a', 13n], ['proj_b', 11n]])])
  })

  test('a checkpoint is not used after rows were deleted, or inserted under another transaction id', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    const row = (name: string, costMicros: bigint) => usageEvent({ orgId: org, requestId: `req_${name}_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros, createdAt: new Date('2026-06-10T10:00:00Z') })
    const inflateCheckpoint = () => db.drizzle.execute(sql`UPDATE spend_checkpoints SET spends = '[["key_a", "proj_a", "1000000"]]' WHERE org_id = ${org}`)
    await db.usage.insertUsageEvents([row('a', 5n), row('b', 7n)])

    await db.ledger.readCounters(org, '202606', 'Africa/Cairo')
    await inflateCheckpoint()
    await db.drizzle.execute(sql`DELETE FROM usage_events WHERE request_id = ${`req_b_${org}`}`)
    const afterDelete = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')
    await inflateCheckpoint()
    await db.drizzle.execute(sql`INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at, inserted_xid)
      VALUES (${`req_c_${org}`}, ${org}, 'proj_a', 'key_a', 'm', 'chat.completions', false, 1, 1, 11, 200, 1, NULL, '2026-06-11T00:00:00Z', NULL)`)
    const afterForeignInsert = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')

    expect([afterDelete.keySpend, afterForeignInsert.keySpend]).toEqual([new Map([['key_a', 5n]]), new Map([['key_a', 16n]])])
  })

  test('rows and checkpoints with transaction ids this cluster has not reached (restored from another) count once', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    await db.usage.insertUsageEvents([usageEvent({ orgId: org, requestId: `req_a_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 5n, createdAt: new Date('2026-06-10T10:00:00Z') })])
    await db.drizzle.execute(sql`INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at, inserted_xid)
      VALUES (${`req_restored_${org}`}, ${org}, 'proj_a', 'key_a', 'm', 'chat.completions', false, 1, 1, 11, 200, 1, NULL, '2026-06-11T00:00:00Z', '9999999990')`)
    const read = async () => (await db.ledger.readCounters(org, '202606', 'Africa/Cairo')).keySpend.get('key_a')

    const first = await read()
    const fromCheckpoint = await read()
    await db.drizzle.execute(sql`UPDATE spend_checkpoints SET snapshot = '9999999995:9999999995:', spends = '[["key_a", "proj_a", "1000000"]]' WHERE org_id = ${org}`)
    const pastRestoredCheckpoint = await read()
    const afterIt = await read()

    expect([first, fromCheckpoint, pastRestoredCheckpoint, afterIt]).toEqual([16n, 16n, 16n, 16n])
  })

  test('a read that summed enough rows since the checkpoint leaves its own, from its snapshot', async () => {
    const { db } = context.current
    const reader = createLedgerReader(db.drizzle, { checkpointAfterRows: 2 })
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    const row = (name: string, costMicros: bigint) => usageEvent({ orgId: org, requestId: `req_${name}_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros, createdAt: new Date('2026-06-10T10:00:00Z') })
    const checkpoint = async () => rowsOf<{ snapshot: string; spends: unknown }>(await db.drizzle.execute(sql`SELECT snapshot::text AS snapshot, spends FROM spend_checkpoints WHERE org_id = ${org}`))
    await db.usage.insertUsageEvents([row('a', 5n)])

    const first = await reader.readCounters(org, '202606', 'Africa/Cairo')
    await db.usage.insertUsageEvents([row('b', 7n)])
    await reader.readCounters(org, '202606', 'Africa/Cairo')
    const kept = await checkpoint()
    await db.usage.insertUsageEvents([row('c', 11n)])
    const third = await reader.readCounters(org, '202606', 'Africa/Cairo')

    // One row since the first checkpoint is below the threshold; two are not.
    expect(kept).toEqual([{ snapshot: first.snapshot!, spends: [['key_a', 'proj_a', '5']] }])
    expect(await checkpoint()).toEqual([{ snapshot: third.snapshot!, spends: [['key_a', 'proj_a', '23']] }])
    expect(third.keySpend).toEqual(new Map([['key_a', 23n]]))
  })

  test('the balance reads the daily sums kept with the rows whoever writes them: batches, a replayed batch, SQL by hand inserting, updating and deleting', async () => {
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
    // An operator's corrections: a cost lowered and moved to May in Cairo, a row removed.
    await db.drizzle.execute(sql`UPDATE usage_events SET cost_micros = 150, created_at = '2026-05-31T20:00:00Z' WHERE request_id = ${`req_3_${org}`}`)
    await db.drizzle.execute(sql`DELETE FROM usage_events WHERE request_id = ${`req_2_${org}`}`)

    const june = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')
    const may = await db.ledger.readCounters(org, '202605', 'Africa/Cairo')

    expect(june.balanceMicros).toBe(1_000_000n - 100n - 150n - 400n - 500n)
    expect([june.keySpend, june.projectSpend]).toEqual([new Map([['key_a', 100n], ['key_b', 400n], ['key_c', 500n]]), new Map([['proj_a', 1_000n]])])
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
    test('a row whose transaction was open during the read that kept the checkpoint is added once it commits', async () => {
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
        expect(rowsOf(await db.drizzle.execute(sql`SELECT FROM spend_checkpoints WHERE org_id = ${org}`))).toHaveLength(1)
      } finally {
        await writer.end()
      }
    })
  }

  if (context.kind === 'postgres') {
    test('the daily sums stay exact when gateways write batches of one organization at once', async () => {
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
    })
  }
})
