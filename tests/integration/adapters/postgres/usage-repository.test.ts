import { expect, test } from 'bun:test'
import { asc, eq, sql } from 'drizzle-orm'
import { rowsOf as rowsOfResult } from '../../../../server/adapters/postgres/drizzle'
import { apiKeys, usageEvents } from '../../../../server/adapters/postgres/schema'
import { hashApiKey } from '../../../../server/core/api-keys'
import { randomBase62 } from '../../../../server/core/api-keys'
import type { UsageEvent } from '../../../../server/core/ports'
import { describeEachDatabase } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

describeEachDatabase('insertUsageEvents', (context) => {
  async function rowsOf(orgId: string): Promise<UsageEvent[]> {
    const rows = await context.current.db.drizzle.select().from(usageEvents).where(eq(usageEvents.orgId, orgId)).orderBy(asc(usageEvents.requestId))
    return rows.map(({ unbilledPromptTokens, unbilledCompletionTokens, unbilledMicros, ...event }) =>
      unbilledMicros > 0n ? { ...event, unbilled: { promptTokens: unbilledPromptTokens, completionTokens: unbilledCompletionTokens, micros: unbilledMicros } } : event,
    )
  }

  function eventsOf(orgId: string, count: number): UsageEvent[] {
    return Array.from({ length: count }, (_, index) => usageEvent({ orgId, requestId: `req_${orgId}_${String(index).padStart(5, '0')}` }))
  }

  test('writes every field of a batch', async () => {
    const orgId = `org_${randomBase62(8)}`
    const events = [
      usageEvent({ orgId, requestId: 'req_a', costMicros: 9_007_199_254_740_993n, createdAt: new Date('2025-05-01T12:00:00.123Z') }),
      usageEvent({ orgId, requestId: 'req_b', endpoint: 'embeddings', stream: false, status: 499, region: null }),
      // Text that CSV must quote, and an empty string that must not become NULL.
      usageEvent({ orgId, requestId: 'req_c', model: 'odd/"model", with\na newline', region: '' }),
      // Usage an upstream reported beyond the hold: recorded, not billed.
      usageEvent({ orgId, requestId: 'req_d', unbilled: { promptTokens: 15_900, completionTokens: 2, micros: 9_007_199_254_740_993n } }),
    ]

    await context.current.db.usage.insertUsageEvents(events)

    expect(await rowsOf(orgId)).toEqual(events)
  })

  test("each row's writing transaction is known from its xmin, rows of a replayed batch too", async () => {
    const orgId = `org_${randomBase62(8)}`
    const events = eventsOf(orgId, 4)
    const { usage } = context.current.db

    await usage.insertUsageEvents(events.slice(0, 2))
    await usage.insertUsageEvents(events)

    const xids = rowsOfResult<{ xid: string }>(
      await context.current.db.drizzle.execute(sql`SELECT nilegate_row_xid(xmin)::text AS xid FROM usage_events WHERE org_id = ${orgId} ORDER BY request_id`),
    ).map((row) => row.xid)
    expect(xids.every((xid) => xid !== null && /^\d+$/.test(xid))).toBe(true)
    expect(xids[0]).toBe(xids[1]!)
    expect(xids[2]).toBe(xids[3]!)
    expect(BigInt(xids[2]!)).toBeGreaterThan(BigInt(xids[0]!))
  })

  test('replaying a batch, or an overlapping one, inserts no row twice', async () => {
    const orgId = `org_${randomBase62(8)}`
    const events = eventsOf(orgId, 5)
    const { usage } = context.current.db

    await usage.insertUsageEvents(events.slice(0, 3))
    await usage.insertUsageEvents(events.slice(0, 3))
    await usage.insertUsageEvents(events.slice(1))

    expect((await rowsOf(orgId)).map((row) => row.requestId)).toEqual(events.map((event) => event.requestId))
  })

  test('accepts an empty batch and batches larger than one statement can carry', async () => {
    const orgId = `org_${randomBase62(8)}`
    const events = eventsOf(orgId, 4_500)

    await context.current.db.usage.insertUsageEvents([])
    await context.current.db.usage.insertUsageEvents(events)

    expect(await rowsOf(orgId)).toHaveLength(4_500)
  })

  test("moves a key's last use to its newest new row, at most once a minute", async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const [key] = await db.drizzle.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.secretHash, hashApiKey(tenant.apiKey)))
    const lastUsed = async () => (await db.drizzle.select({ at: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.id, key!.id)))[0]!.at
    const at = (iso: string) => usageEvent({ orgId: tenant.organizationId, projectId: tenant.projectId, keyId: key!.id, createdAt: new Date(iso) })

    await db.usage.insertUsageEvents([at('2026-03-01T10:00:00Z'), at('2026-03-01T10:00:20Z')])
    expect(await lastUsed()).toEqual(new Date('2026-03-01T10:00:20Z'))
    await db.usage.insertUsageEvents([at('2026-03-01T10:00:50Z')])
    expect(await lastUsed()).toEqual(new Date('2026-03-01T10:00:20Z'))
    await db.usage.insertUsageEvents([at('2026-03-01T10:05:00Z')])
    expect(await lastUsed()).toEqual(new Date('2026-03-01T10:05:00Z'))
  })

  test('a busy key costs no UPDATE within the minute after its last use was written', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const [key] = await db.drizzle.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.secretHash, hashApiKey(tenant.apiKey)))
    const lastUsed = async () => (await db.drizzle.select({ at: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.id, key!.id)))[0]!.at
    const clear = () => db.drizzle.update(apiKeys).set({ lastUsedAt: null }).where(eq(apiKeys.id, key!.id))
    const start = Date.now()
    const at = (offsetMs: number) => usageEvent({ orgId: tenant.organizationId, projectId: tenant.projectId, keyId: key!.id, createdAt: new Date(start + offsetMs) })

    await db.usage.insertUsageEvents([at(0)])
    expect(await lastUsed()).toEqual(new Date(start))
    // Cleared behind the repository's back: only a batch that writes the key brings it back.
    await clear()
    await db.usage.insertUsageEvents([at(30_000)])
    expect(await lastUsed()).toBeNull()
    await db.usage.insertUsageEvents([at(61_000)])
    expect(await lastUsed()).toEqual(new Date(start + 61_000))
  })
})
