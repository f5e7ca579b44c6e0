import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { organizations, projects } from '../../../server/adapters/postgres/schema'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'
import { usageEvent } from '../../support/usage-events'

// 2026-03-10 00:00 in Cairo (UTC+2) is 2026-03-09 22:00 UTC.
const day1 = Date.UTC(2026, 2, 9, 22) / 1000
const day = 86_400

describeEachDatabase('usage and balance', (context) => {
  async function tenant() {
    const gateway = await managementApp(context.current.db, { now: () => (day1 + 3 * day) * 1000 })
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const projectA = `proj_a_${orgId}`
    const projectB = `proj_b_${orgId}`
    await context.current.db.drizzle.insert(projects).values([
      { id: projectA, orgId, name: 'A', monthlySpendCapMicros: 5_000_000n },
      { id: projectB, orgId, name: 'B' },
    ])
    const at = (seconds: number) => new Date(seconds * 1000)
    await context.current.db.usage.insertUsageEvents([
      usageEvent({ orgId, projectId: projectA, keyId: 'key_1', model: 'm-chat', promptTokens: 10, completionTokens: 5, costMicros: 1_500n, createdAt: at(day1 + 60) }),
      usageEvent({ orgId, projectId: projectA, keyId: 'key_1', model: 'm-chat', promptTokens: 20, completionTokens: 5, costMicros: 2_500n, createdAt: at(day1 + 3_600) }),
      usageEvent({ orgId, projectId: projectB, keyId: 'key_2', model: 'm-embed', endpoint: 'embeddings', promptTokens: 100, completionTokens: 0, costMicros: 100n, createdAt: at(day1 + day + 10) }),
      // Just before day 1 in Cairo: outside the range asked for.
      usageEvent({ orgId, projectId: projectA, keyId: 'key_1', model: 'm-chat', promptTokens: 999, completionTokens: 999, costMicros: 999n, createdAt: at(day1 - 1) }),
      // Another organization's usage, inside the range.
      usageEvent({ orgId: 'org_someone_else', projectId: projectA, keyId: 'key_1', model: 'm-chat', costMicros: 7n, createdAt: at(day1 + 60) }),
    ])
    return { gateway, owner, orgId, projectA, projectB }
  }

  test('day buckets in the billing time zone, empty ones included, totals from the ledger', async () => {
    const { gateway, owner } = await tenant()
    const page = await gateway.send('GET', `/v1/organization/usage?start_time=${day1}&end_time=${day1 + 3 * day}`, { token: owner.token })
    expect(page.status).toBe(200)
    expect(page.json.object).toBe('page')
    expect(page.json.data.map((bucket: { start_time: number }) => bucket.start_time)).toEqual([day1, day1 + day, day1 + 2 * day])
    expect(page.json.data[0].results).toEqual([
      { object: 'organization.usage.result', input_tokens: 30, output_tokens: 10, num_model_requests: 2, cost_egp: '0.004000', project_id: null, api_key_id: null, model: null },
    ])
    expect(page.json.data[1].results[0]).toMatchObject({ input_tokens: 100, num_model_requests: 1, cost_egp: '0.000100' })
    expect(page.json.data[2].results).toEqual([])
    expect(page.json.has_more).toBe(false)
  })

  test('grouped by model and project, filtered by endpoint, paged by bucket', async () => {
    const { gateway, owner, projectA } = await tenant()
    const grouped = await gateway.send('GET', `/v1/organization/usage/completions?start_time=${day1}&end_time=${day1 + 2 * day}&group_by[]=model&group_by[]=project_id&limit=1`, { token: owner.token })
    expect(grouped.status).toBe(200)
    expect(grouped.json.data).toHaveLength(1)
    expect(grouped.json.data[0].results).toEqual([
      { object: 'organization.usage.completions.result', input_tokens: 30, output_tokens: 10, num_model_requests: 2, cost_egp: '0.004000', project_id: projectA, api_key_id: null, model: 'm-chat' },
    ])
    expect(grouped.json.has_more).toBe(true)
    const next = await gateway.send('GET', `/v1/organization/usage/completions?start_time=${day1}&end_time=${day1 + 2 * day}&limit=1&page=${grouped.json.next_page}`, { token: owner.token })
    expect(next.json.data[0].start_time).toBe(day1 + day)
    // Day 2 only has embeddings.
    expect(next.json.data[0].results).toEqual([])
    expect(next.json.has_more).toBe(false)
  })

  test('hour buckets and filters by key and model', async () => {
    const { gateway, owner } = await tenant()
    const hours = await gateway.send('GET', `/v1/organization/usage?start_time=${day1}&end_time=${day1 + 2 * 3_600}&bucket_width=1h&api_key_ids=key_1&models[]=m-chat`, { token: owner.token })
    expect(hours.json.data.map((bucket: { results: { num_model_requests: number }[] }) => bucket.results[0]?.num_model_requests ?? 0)).toEqual([1, 1])
  })

  test('OpenAI-Project narrows usage and balance to that project', async () => {
    const { gateway, owner, projectB } = await tenant()
    const usage = await gateway.send('GET', `/v1/organization/usage?start_time=${day1}&end_time=${day1 + 2 * day}&group_by=project_id`, { token: owner.token, headers: { 'openai-project': projectB } })
    expect(usage.json.data.flatMap((bucket: { results: { project_id: string }[] }) => bucket.results.map((result) => result.project_id))).toEqual([projectB])
    const balance = await gateway.send('GET', '/v1/organization/balance', { token: owner.token, headers: { 'openai-project': projectB } })
    expect(balance.json.projects.map((project: { id: string }) => project.id)).toEqual([projectB])
  })

  test('balance: credits minus the ledger, month-to-date spend per project against its cap', async () => {
    const { gateway, owner, orgId, projectA, projectB } = await tenant()
    await context.current.db.drizzle.update(organizations).set({ balanceMicros: 0n }).where(eq(organizations.id, orgId))
    const balance = await gateway.send('GET', '/v1/organization/balance', { token: owner.token })
    expect(balance.status).toBe(200)
    expect(balance.json).toMatchObject({ object: 'organization.balance', organization_id: orgId, balance_egp: '-0.005099', month: '2026-03', billing_time_zone: 'Africa/Cairo', month_to_date_spend_egp: '0.005099' })
    expect(balance.json.projects).toEqual([
      { id: projectA, name: 'A', month_to_date_spend_egp: '0.004999', monthly_spend_cap_egp: '5.000000' },
      { id: projectB, name: 'B', month_to_date_spend_egp: '0.000100', monthly_spend_cap_egp: null },
    ])
  })

  test('bad parameters are 400 with the parameter named; other tenants see none of it', async () => {
    const { gateway } = await tenant()
    const stranger = await gateway.signUp()
    await gateway.createOrganization(stranger)
    for (const [query, param] of [
      ['', 'start_time'],
      [`start_time=${day1}&bucket_width=1m`, 'bucket_width'],
      [`start_time=${day1}&group_by=user_id`, 'group_by'],
      [`start_time=${day1}&limit=32`, 'limit'],
      [`start_time=${day1}&end_time=${day1}`, 'end_time'],
      ['start_time=abc', 'start_time'],
    ] as const) {
      const response = await gateway.send('GET', `/v1/organization/usage?${query}`, { token: stranger.token })
      expect({ query, status: response.status, param: response.json.error?.param }).toEqual({ query, status: 400, param })
    }
    const empty = await gateway.send('GET', `/v1/organization/usage?start_time=${day1}&end_time=${day1 + day}`, { token: stranger.token })
    expect(empty.json.data[0].results).toEqual([])
  })
})
