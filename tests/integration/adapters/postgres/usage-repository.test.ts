import { expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import { usageEvents } from '../../../../server/adapters/postgres/schema'
import { randomBase62 } from '../../../../server/core/api-keys'
import type { UsageEvent } from '../../../../server/core/ports'
import { describeEachDatabase } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

describeEachDatabase('insertUsageEvents', (context) => {
  async function rowsOf(orgId: string) {
    return context.current.db.drizzle.select().from(usageEvents).where(eq(usageEvents.orgId, orgId)).orderBy(asc(usageEvents.requestId))
  }

  function eventsOf(orgId: string, count: number): UsageEvent[] {
    return Array.from({ length: count }, (_, index) => usageEvent({ orgId, requestId: `req_${orgId}_${String(index).padStart(5, '0')}` }))
  }

  test('writes every field of a batch', async () => {
    const orgId = `org_${randomBase62(8)}`
    const events = [
      usageEvent({ orgId, requestId: 'req_a', costMicros: 9_007_199_254_740_993n, createdAt: new Date('2025-05-01T12:00:00.123Z') }),
      usageEvent({ orgId, requestId: 'req_b', endpoint: 'embeddings', stream: false, status: 499, region: null }),
    ]

    await context.current.db.usage.insertUsageEvents(events)

    expect(await rowsOf(orgId)).toEqual(events)
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
})
