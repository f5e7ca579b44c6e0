import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rowsOf } from '../../../../server/adapters/postgres/drizzle'
import type { UsageQuery } from '../../../../server/core/governance/usage'
import type { UsageEvent } from '../../../../server/core/ports'
import { describeEachDatabase, type TestDatabase } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

/** A small deterministic generator, so that a failure can be replayed. */
function randomFrom(seed: number) {
  let state = seed >>> 0
  return (below: number) => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
    return state % below
  }
}

const zones = ['Africa/Cairo', 'Asia/Kolkata', 'Asia/Kathmandu', 'America/St_Johns', 'Australia/Lord_Howe', 'UTC']

/**
 * The report as the raw rows give it, straight from usage_events: each row in the bucket of the
 * zone's day or hour that holds it, from start_time to end_time. The rollups must give the same.
 */
async function reportFromRows(database: TestDatabase, query: UsageQuery, buckets: { startTime: number; endTime: number }[]) {
  if (buckets.length === 0) return []
  const unit = query.bucketWidth === '1d' ? 'day' : 'hour'
  const from = Math.max(query.startTime, buckets[0]!.startTime)
  const until = Math.min(query.endTime, buckets.at(-1)!.endTime)
  const rows = rowsOf<{ bucket: string; key_id: string; model: string; requests: number; input: string; output: string; cost: string }>(
    await database.db.drizzle.execute(sql`
      SELECT extract(epoch FROM (date_trunc(${unit}, created_at AT TIME ZONE ${query.timeZone}) AT TIME ZONE ${query.timeZone}))::bigint::text AS bucket,
        key_id, model, count(*)::int AS requests, SUM(prompt_tokens)::text AS input, SUM(completion_tokens)::text AS output, SUM(cost_micros)::text AS cost
      FROM usage_events
      WHERE org_id = ${query.orgId} AND created_at >= to_timestamp(${from}) AND created_at < to_timestamp(${until})
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`),
  )
  return rows.map((row) => [Number(row.bucket), row.key_id, row.model, row.requests, Number(row.input), Number(row.output), BigInt(row.cost)])
}

describeEachDatabase('usage reports from rollups', (context) => {
  async function organizationIn(timeZone: string): Promise<string> {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    // As if created in that zone: its day rollups hold whole days of it.
    await db.drizzle.execute(sql`UPDATE organizations SET billing_time_zone = ${timeZone} WHERE id = ${tenant.organizationId}`)
    await db.drizzle.execute(sql`UPDATE organizations SET day_rollups_from = NULL WHERE id = ${tenant.organizationId}`)
    return tenant.organizationId
  }

  for (const [index, timeZone] of zones.entries()) {
    test(`every bucket, grouping and range gives what the raw rows give, in ${timeZone}`, async () => {
      const { db } = context.current
      const org = await organizationIn(timeZone)
      const random = randomFrom(index + 1)
      // Four weeks of rows around a daylight-saving change (Lord Howe moves by half an hour), some
      // on the seconds that start quarter-hours and hours.
      const base = Date.parse('2026-09-20T00:00:00Z')
      const events: UsageEvent[] = Array.from({ length: 600 }, (_, n) => {
        const atMs = base + random(28 * 24 * 4) * 900_000 + (n % 3 === 0 ? 0 : random(900) * 1_000)
        return usageEvent({
          orgId: org, requestId: `req_${n}_${org}`, keyId: `key_${random(3)}`, projectId: `proj_${random(2)}`, model: `model_${random(2)}`,
          endpoint: random(4) === 0 ? 'embeddings' : 'chat.completions', promptTokens: random(1_000), completionTokens: random(1_000), costMicros: BigInt(1 + random(1_000_000)), createdAt: new Date(atMs),
        })
      })
      await db.usage.insertUsageEvents(events)

      for (let round = 0; round < 12; round++) {
        const bucketWidth = round % 2 === 0 ? '1d' : '1h'
          // Ranges that start and end on any second, and on quarter-hours.
        const startTime = Math.floor(base / 1000) + random(20 * 24 * 3600) - (round % 4 === 0 ? 0 : random(900))
        const span = bucketWidth === '1d' ? random(12 * 24 * 3600) + 3600 : random(3 * 24 * 3600) + 60
        const query: UsageQuery = {
          orgId: org, timeZone, startTime, endTime: startTime + span, bucketWidth, limit: bucketWidth === '1d' ? 31 : 168,
          groupBy: ['api_key_id', 'model'], endpoint: null, projectIds: null, apiKeyIds: null, models: null,
        }

        const report = await db.governance.usage.usageBuckets(query)
        const fromRollups = report.buckets.flatMap((bucket) =>
          bucket.results.map((line) => [bucket.startTime, line.apiKeyId, line.model, line.requests, line.inputTokens, line.outputTokens, line.costMicros]),
        )

        expect({ round, lines: fromRollups }).toEqual({ round, lines: await reportFromRows(context.current, query, report.buckets) })
      }
    })
  }

  test('filters by endpoint, project, key and model read the same rows from every rollup', async () => {
    const { db } = context.current
    const org = await organizationIn('Asia/Kolkata')
    const at = (iso: string) => new Date(iso)
    await db.usage.insertUsageEvents([
      usageEvent({ orgId: org, requestId: `req_a_${org}`, keyId: 'key_a', projectId: 'proj_a', model: 'model_a', costMicros: 1n, createdAt: at('2026-10-01T18:31:00Z') }),
      usageEvent({ orgId: org, requestId: `req_b_${org}`, keyId: 'key_b', projectId: 'proj_b', model: 'model_a', costMicros: 10n, createdAt: at('2026-10-01T20:00:00Z') }),
      usageEvent({ orgId: org, requestId: `req_c_${org}`, keyId: 'key_a', projectId: 'proj_a', model: 'model_b', endpoint: 'embeddings', costMicros: 100n, createdAt: at('2026-10-02T19:00:00Z') }),
    ])
    const query = (overrides: Partial<UsageQuery>): UsageQuery => ({
      orgId: org, timeZone: 'Asia/Kolkata', startTime: Date.parse('2026-10-01T18:30:00Z') / 1000, endTime: Date.parse('2026-10-03T18:30:00Z') / 1000,
      bucketWidth: '1d', limit: 31, groupBy: [], endpoint: null, projectIds: null, apiKeyIds: null, models: null, ...overrides,
    })
    const costs = async (overrides: Partial<UsageQuery>) => (await db.governance.usage.usageBuckets(query(overrides))).buckets.map((bucket) => bucket.results.map((line) => line.costMicros))

    expect(await costs({})).toEqual([[11n], [100n]])
    expect(await costs({ endpoint: 'embeddings' })).toEqual([[], [100n]])
    expect(await costs({ projectIds: ['proj_b'] })).toEqual([[10n], []])
    expect(await costs({ apiKeyIds: ['key_a'], bucketWidth: '1h', limit: 48 })).toEqual(Array.from({ length: 48 }, (_, hour) => (hour === 0 ? [1n] : hour === 24 ? [100n] : [])))
    expect(await costs({ models: ['model_a'], startTime: Date.parse('2026-10-01T18:45:00Z') / 1000 })).toEqual([[10n], []])
  })

  test('a range that starts or ends inside a quarter-hour counts the rows of its part of it', async () => {
    const { db } = context.current
    const org = await organizationIn('Africa/Cairo')
    const at = (iso: string) => new Date(iso)
    await db.usage.insertUsageEvents([
      usageEvent({ orgId: org, requestId: `req_before_${org}`, costMicros: 1n, createdAt: at('2026-10-05T10:02:00Z') }),
      usageEvent({ orgId: org, requestId: `req_inside_${org}`, costMicros: 10n, createdAt: at('2026-10-05T10:07:00Z') }),
      usageEvent({ orgId: org, requestId: `req_after_${org}`, costMicros: 100n, createdAt: at('2026-10-05T10:12:00Z') }),
    ])

    const report = await db.governance.usage.usageBuckets({
      orgId: org, timeZone: 'Africa/Cairo', startTime: Date.parse('2026-10-05T10:05:00Z') / 1000, endTime: Date.parse('2026-10-05T10:10:00Z') / 1000,
      bucketWidth: '1h', limit: 24, groupBy: [], endpoint: null, projectIds: null, apiKeyIds: null, models: null,
    })

    expect(report.buckets.map((bucket) => bucket.results.map((line) => line.costMicros))).toEqual([[10n]])
    expect(report.rawFrom).toBeNull()
  })
})
