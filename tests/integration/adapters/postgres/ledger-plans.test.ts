import { expect, test } from 'bun:test'
import { sql, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import type { Drizzle } from '../../../../server/adapters/postgres/drizzle'
import { rowsOf } from '../../../../server/adapters/postgres/drizzle'
import { createUsageReportRepository } from '../../../../server/adapters/postgres/governance/usage'
import { createLedgerReader } from '../../../../server/adapters/postgres/ledger-repository'
import { describeEachDatabase } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  Plans?: PlanNode[]
  [field: string]: unknown
}

/** Every node of a plan, depth first. */
function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)]
}

const ledgerTable = /^usage_(events|rollup_|totals)/
const dialect = new PgDialect()

describeEachDatabase('ledger reads', (context) => {
  /**
   * A drizzle handle that, for each statement the repositories run, also keeps its plan: EXPLAIN
   * with sequential scans discouraged, so that a sequential scan left in a plan is one no index
   * can spare (on a small table the planner would rightly prefer one anyway).
   */
  function explaining(db: Drizzle, plans: { statement: string; plan: Record<string, unknown> }[]): Drizzle {
    const execute = async (query: SQL) => {
      const plan = await db.transaction(async (tx) => {
        await tx.execute(sql`SET LOCAL enable_seqscan = off`)
        const [row] = rowsOf<{ 'QUERY PLAN': unknown }>(await tx.execute(sql`EXPLAIN (FORMAT JSON) ${query}`))
        const value = row!['QUERY PLAN']
        return (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown>[]
      })
      plans.push({ statement: dialect.sqlToQuery(query).sql, plan: plan[0]! })
      return db.execute(query)
    }
    return new Proxy(db, { get: (target, name) => (name === 'execute' ? execute : Reflect.get(target, name)) })
  }

  test('no ledger read is planned as a sequential scan of usage rows or their sums, nor with JIT', async () => {
    const { db } = context.current
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    const nowMs = Date.now()
    await db.usage.insertUsageEvents(Array.from({ length: 50 }, (_, n) => usageEvent({ orgId: org, requestId: `req_${n}_${org}`, createdAt: new Date(nowMs - n * 600_000) })))
    const plans: { statement: string; plan: Record<string, unknown> }[] = []
    const drizzle = explaining(db.drizzle, plans)
    const ledger = createLedgerReader(drizzle)
    const reports = createUsageReportRepository(drizzle)
    const query = { orgId: org, timeZone: 'Africa/Cairo', groupBy: ['api_key_id' as const], endpoint: null, projectIds: null, apiKeyIds: ['key_test'], models: null }

    const { snapshot } = await ledger.readCounters(org, '202612', 'Africa/Cairo', [`req_1_${org}`, 'req_other'])
    await ledger.readUsageAfter(org, snapshot!, nowMs - 3_600_000, nowMs + 60_000, 'Africa/Cairo')
    await ledger.findUsageRows(org, snapshot!, [`req_1_${org}`], 'Africa/Cairo')
    await reports.usageBuckets({ ...query, startTime: Math.floor(nowMs / 1000) - 30 * 86_400 + 7, endTime: Math.floor(nowMs / 1000), bucketWidth: '1d', limit: 31 })
    await reports.usageBuckets({ ...query, startTime: Math.floor(nowMs / 1000) - 7 * 86_400, endTime: Math.floor(nowMs / 1000) - 61, bucketWidth: '1h', limit: 168 })

    const scans = plans.flatMap(({ statement, plan }) =>
      nodesOf(plan.Plan as PlanNode)
        .filter((node) => node['Relation Name'] !== undefined && ledgerTable.test(node['Relation Name']))
        .map((node) => ({ statement, scan: node['Node Type'], table: node['Relation Name'] })),
    )
    // Index scans that walk a whole index are no better: each is bounded by the organization.
    const unbounded = plans.flatMap(({ statement, plan }) =>
      nodesOf(plan.Plan as PlanNode)
        .filter((node) => /Index/.test(node['Node Type']) && /^usage_/.test(String(node['Index Name'])) && !String(node['Index Cond'] ?? '').includes('org_id'))
        .map((node) => ({ statement, index: node['Index Name'] })),
    )
    expect(plans.length).toBeGreaterThanOrEqual(7)
    expect(scans.filter((scan) => scan.scan === 'Seq Scan')).toEqual([])
    expect(scans.length).toBeGreaterThan(0)
    expect(unbounded).toEqual([])
    expect(plans.filter(({ plan }) => 'JIT' in plan)).toEqual([])
    // The rows since a time are looked for in that time's partition (and the default one) only.
    const lateRead = plans.find(({ statement }) => statement.includes('NOT pg_visible_in_snapshot'))!
    const partitions = new Set(nodesOf(lateRead.plan.Plan as PlanNode).flatMap((node) => (node['Relation Name']?.startsWith('usage_events') ? [node['Relation Name']] : [])))
    expect(partitions.size).toBeLessThanOrEqual(3)
  })

  if (context.kind === 'postgres') {
    test("the gateway's connections never compile a statement (JIT off)", async () => {
      const [row] = rowsOf<{ jit: string }>(await context.current.db.drizzle.execute(sql`SHOW jit`))

      expect(row).toEqual({ jit: 'off' })
    })
  }
})
