import { and, asc, eq, inArray, sql, type SQL } from 'drizzle-orm'
import type { UsageBucket, UsageQuery, UsageReportStore, UsageTotals } from '../../../core/governance/usage'
import { rowsOf, type Drizzle } from '../drizzle'
import { apiKeys, projects, usageEvents } from '../schema'

const unitOf = { '1d': 'day', '1h': 'hour' } as const
const stepOf = { '1d': '1 day', '1h': '1 hour' } as const
const columnOf = { project_id: usageEvents.projectId, api_key_id: usageEvents.keyId, model: usageEvents.model } as const

export function createUsageReportRepository(db: Drizzle): UsageReportStore {
  return {
    async usageBuckets(query: UsageQuery) {
      const unit = sql.raw(`'${unitOf[query.bucketWidth]}'`)
      const step = sql.raw(`interval '${stepOf[query.bucketWidth]}'`)
      // Bucket starts are counted in local time and converted back, so a day is a calendar day of the
      // zone even across a daylight-saving change.
      const boundaries = rowsOf<{ start: string; end: string }>(
        await db.execute(sql`
          SELECT extract(epoch FROM (local AT TIME ZONE ${query.timeZone}))::bigint::text AS start,
                 extract(epoch FROM ((local + ${step}) AT TIME ZONE ${query.timeZone}))::bigint::text AS end
          FROM generate_series(
            date_trunc(${unit}, to_timestamp(${query.startTime}) AT TIME ZONE ${query.timeZone}),
            to_timestamp(${query.endTime}) AT TIME ZONE ${query.timeZone} - interval '1 microsecond',
            ${step}) AS local
          ORDER BY local
          LIMIT ${query.limit + 1}`),
      )
      const hasMore = boundaries.length > query.limit
      const buckets: UsageBucket[] = boundaries.slice(0, query.limit).map((row) => ({ startTime: Number(row.start), endTime: Number(row.end), results: [] }))
      if (buckets.length === 0) return { buckets, hasMore: false }
      const from = Math.max(query.startTime, buckets[0]!.startTime)
      const until = Math.min(query.endTime, buckets.at(-1)!.endTime)
      const bucketStart = sql`extract(epoch FROM (date_trunc(${unit}, ${usageEvents.createdAt} AT TIME ZONE ${query.timeZone}) AT TIME ZONE ${query.timeZone}))::bigint`
      const groups = query.groupBy.map((field) => columnOf[field])
      const conditions: SQL[] = [
        sql`${usageEvents.orgId} = ${query.orgId}`,
        sql`${usageEvents.createdAt} >= to_timestamp(${from})`,
        sql`${usageEvents.createdAt} < to_timestamp(${until})`,
      ]
      if (query.endpoint) conditions.push(sql`${usageEvents.endpoint} = ${query.endpoint}`)
      if (query.projectIds) conditions.push(inArray(usageEvents.projectId, query.projectIds))
      if (query.apiKeyIds) conditions.push(inArray(usageEvents.keyId, query.apiKeyIds))
      if (query.models) conditions.push(inArray(usageEvents.model, query.models))
      const selected = [
        sql`${bucketStart}::text AS bucket`,
        ...groups.map((column, index) => sql`${column} AS ${sql.raw(`g${index}`)}`),
        sql`SUM(${usageEvents.promptTokens})::text AS input_tokens`,
        sql`SUM(${usageEvents.completionTokens})::text AS output_tokens`,
        sql`COUNT(*)::text AS requests`,
        sql`SUM(${usageEvents.costMicros})::text AS cost`,
      ]
      // Grouped and ordered by the bucket and the group columns, by position in the select list.
      const positions = sql.raw(Array.from({ length: groups.length + 1 }, (_, index) => String(index + 1)).join(', '))
      const rows = rowsOf<Record<string, string | null>>(
        await db.execute(sql`SELECT ${sql.join(selected, sql`, `)} FROM ${usageEvents} WHERE ${sql.join(conditions, sql` AND `)} GROUP BY ${positions} ORDER BY ${positions}`),
      )
      const byStart = new Map(buckets.map((bucket) => [bucket.startTime, bucket]))
      for (const row of rows) {
        const field = (name: (typeof query.groupBy)[number]) => {
          const index = query.groupBy.indexOf(name)
          return index < 0 ? null : (row[`g${index}`] ?? null)
        }
        const totals: UsageTotals = {
          projectId: field('project_id'),
          apiKeyId: field('api_key_id'),
          model: field('model'),
          inputTokens: Number(row.input_tokens),
          outputTokens: Number(row.output_tokens),
          requests: Number(row.requests),
          costMicros: BigInt(row.cost ?? '0'),
        }
        byStart.get(Number(row.bucket))?.results.push(totals)
      }
      return { buckets, hasMore }
    },

    async spendSummary(orgId, projectId, spends) {
      const projectFilter = projectId === null ? [] : [eq(projects.id, projectId)]
      const projectRows = await db
        .select({ id: projects.id, name: projects.name, capMicros: projects.monthlySpendCapMicros })
        .from(projects)
        .where(and(eq(projects.orgId, orgId), ...projectFilter))
        .orderBy(asc(projects.createdAt), asc(projects.id))
      const keyFilter = projectId === null ? [] : [eq(apiKeys.projectId, projectId)]
      const keyRows = await db
        .select({ id: apiKeys.id, name: apiKeys.name, projectId: apiKeys.projectId, capMicros: apiKeys.monthlySpendCapMicros })
        .from(apiKeys)
        .where(and(eq(apiKeys.orgId, orgId), ...keyFilter))
        .orderBy(asc(apiKeys.createdAt), asc(apiKeys.id))
      return {
        projects: projectRows.map((row) => ({ id: row.id, name: row.name, projectId: row.id, spendMicros: spends.projects.get(row.id) ?? 0n, capMicros: row.capMicros })),
        apiKeys: keyRows.map((row) => ({ ...row, spendMicros: spends.keys.get(row.id) ?? 0n })),
      }
    },
  }
}
