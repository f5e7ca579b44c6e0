import { expect, test } from 'bun:test'
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
      usageEvent({ orgId: 'org_someone_else', requestId: `req_other_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 1_000n, createdAt: new Date('2026-06-15T12:00:00Z') }),
    ])

    const june = await db.ledger.readCounters(org, '202606', 'Africa/Cairo')

    expect(june.month).toBe('202606')
    expect(june.keySpend).toEqual(new Map([['key_a', 11n], ['key_b', 13n]]))
    expect(june.projectSpend).toEqual(new Map([['proj_a', 24n]]))
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
})
