import { and, asc, eq, sql, type SQL } from 'drizzle-orm'
import type { UsageBucket, UsageQuery, UsageReportStore, UsageTotals } from '../../../core/governance/usage'
import { rowsOf, type Drizzle } from '../drizzle'
import { apiKeys, projects } from '../schema'
import { piecesBySource, usagePieces, type Span } from '../usage-pieces'

const unitOf = { '1d': 'day', '1h': 'hour' } as const
const stepOf = { '1d': '1 day', '1h': '1 hour' } as const
const groupColumnOf = { project_id: 'project_id', api_key_id: 'key_id', model: 'model' } as const

export function createUsageReportRepository(db: Drizzle): UsageReportStore {
  return {
    /**
     * Usage summed from the rollups kept with the rows (usage-pieces.ts says which rows of which
     * rollup make up each bucket), so that a report costs its buckets and groups, not the rows
     * behind them. Two statements: the buckets, with what the organization's rollups and retention
     * allow; then the sums, each bucket from its pieces.
     */
    async usageBuckets(query: UsageQuery) {
      const unit = sql.raw(`'${unitOf[query.bucketWidth]}'`)
      const step = sql.raw(`interval '${stepOf[query.bucketWidth]}'`)
      // Bucket starts are counted in local time and converted back, so a day is a calendar day of the
      // zone even across a daylight-saving change.
      const boundaries = rowsOf<{ start: string; end: string; day: string; days_from: string; raw_from: string | null }>(
        await db.execute(sql`
          WITH ledger AS (
            SELECT COALESCE((SELECT CASE WHEN billing_time_zone = ${query.timeZone} THEN extract(epoch FROM COALESCE(day_rollups_from, '-infinity')) END
                             FROM organizations WHERE id = ${query.orgId}), 'Infinity')::text AS days_from,
              (SELECT extract(epoch FROM raw_from)::bigint::text FROM usage_retention) AS raw_from
          )
          SELECT extract(epoch FROM (local AT TIME ZONE ${query.timeZone}))::bigint::text AS start,
                 extract(epoch FROM ((local + ${step}) AT TIME ZONE ${query.timeZone}))::bigint::text AS end,
                 local::date::text AS day, ledger.days_from, ledger.raw_from
          FROM generate_series(
            date_trunc(${unit}, to_timestamp(${query.startTime}) AT TIME ZONE ${query.timeZone}),
            to_timestamp(${query.endTime}) AT TIME ZONE ${query.timeZone} - interval '1 microsecond',
            ${step}) AS local, ledger
          ORDER BY local
          LIMIT ${query.limit + 1}`),
      )
      const hasMore = boundaries.length > query.limit
      const rawFrom = boundaries[0]?.raw_from == null ? null : Number(boundaries[0].raw_from)
      const buckets: UsageBucket[] = boundaries.slice(0, query.limit).map((row) => ({ startTime: Number(row.start), endTime: Number(row.end), results: [] }))
      if (buckets.length === 0) return { buckets, hasMore: false, rawFrom }
      const pieces = usagePieces(
        boundaries.slice(0, query.limit).map((row) => ({ start: Number(row.start), end: Number(row.end), day: row.day })),
        { startTime: query.startTime, endTime: query.endTime, byDay: query.bucketWidth === '1d', daysFrom: Number(boundaries[0]!.days_from), rawFrom: rawFrom ?? -Infinity },
      )
      if (pieces.length === 0) return { buckets, hasMore, rawFrom }
      const groups = query.groupBy.map((field) => groupColumnOf[field])
      // The same filters on every source: each has the columns of a usage row's group.
      const filtered = (alias: string) => {
        const column = (name: string) => sql.raw(`${alias}.${name}`)
        const conditions: SQL[] = [sql`${column('org_id')} = ${query.orgId}`]
        if (query.endpoint) conditions.push(sql`${column('endpoint')} = ${query.endpoint}`)
        if (query.projectIds) conditions.push(sql`${column('project_id')} IN (SELECT json_array_elements_text(${JSON.stringify(query.projectIds)}::json))`)
        if (query.apiKeyIds) conditions.push(sql`${column('key_id')} IN (SELECT json_array_elements_text(${JSON.stringify(query.apiKeyIds)}::json))`)
        if (query.models) conditions.push(sql`${column('model')} IN (SELECT json_array_elements_text(${JSON.stringify(query.models)}::json))`)
        return sql.join(conditions, sql` AND `)
      }
      // Each source is read by its spans (or days), each span an index range of its own, never by
      // a join with the pieces, whose plan the planner would choose by estimates that grow with
      // the table: at 70 million rows it hashed every row of the organization. A row's bucket is
      // the last bucket start at or before it.
      const sources = piecesBySource(pieces)
      const starts = sql`${`{${buckets.map((bucket) => bucket.startTime).join(',')}}`}::bigint[]`
      const sums = (alias: string, at: SQL, requests: string) =>
        sql`${at} AS at, ${sql.raw(`${alias}.project_id, ${alias}.key_id, ${alias}.model, ${requests} AS requests, ${alias}.prompt_tokens, ${alias}.completion_tokens, ${alias}.cost_micros`)}`
      const within = (column: string, [from, until]: Span) => sql`${sql.raw(column)} >= to_timestamp(${from}) AND ${sql.raw(column)} < to_timestamp(${until})`
      const parts: SQL[] = []
      if (sources.days.length > 0) {
        const [first, last] = [sources.days[0]!, sources.days.at(-1)!]
        parts.push(sql`SELECT ${sums('d', sql`extract(epoch FROM (d.day::timestamp AT TIME ZONE ${query.timeZone}))::bigint`, 'd.requests')}
          FROM usage_rollup_days AS d WHERE ${filtered('d')} AND d.time_zone = ${query.timeZone}
            AND d.day >= ${first}::date AND d.day <= ${last}::date AND d.day = ANY(${`{${sources.days.join(',')}}`}::date[])`)
      }
      for (const [kind, table] of [['hours', 'usage_rollup_hours'], ['quarters', 'usage_rollup_quarters']] as const) {
        for (const span of sources[kind]) {
          parts.push(sql`SELECT ${sums('r', sql`extract(epoch FROM r.slot)::bigint`, 'r.requests')} FROM ${sql.raw(table)} AS r WHERE ${filtered('r')} AND ${within('r.slot', span)}`)
        }
      }
      for (const span of sources.rows) {
        parts.push(sql`SELECT ${sums('e', sql`extract(epoch FROM e.created_at)::bigint`, '1::bigint')} FROM usage_events AS e WHERE ${filtered('e')} AND ${within('e.created_at', span)}`)
      }
      const selected = [
        sql`((${starts})[width_bucket(at, ${starts})])::text AS bucket`,
        ...groups.map((column, index) => sql.raw(`${column} AS g${index}`)),
        sql`SUM(prompt_tokens)::text AS input_tokens`,
        sql`SUM(completion_tokens)::text AS output_tokens`,
        sql`SUM(requests)::text AS requests`,
        sql`SUM(cost_micros)::text AS cost`,
      ]
      // Grouped and ordered by the bucket and the group columns, by position in the select list.
      const positions = sql.raw(Array.from({ length: groups.length + 1 }, (_, index) => String(index + 1)).join(', '))
      const rows = rowsOf<Record<string, string | null>>(
        await db.execute(sql`SELECT ${sql.join(selected, sql`, `)} FROM (${sql.join(parts, sql` UNION ALL `)}) AS sums GROUP BY ${positions} ORDER BY ${positions}`),
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
      return { buckets, hasMore, rawFrom }
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
