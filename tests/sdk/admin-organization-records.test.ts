import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Nilegate } from '../../sdk/src'
import { openTestDatabase, slowHookTimeoutMs, type TestDatabase } from '../support/databases'
import { managementApp, signInOperator } from '../support/management-app'

describe("an organization's credits and audit trail through the SDK's admin.organizations", () => {
  let database: TestDatabase
  let gateway: Awaited<ReturnType<typeof managementApp>>
  let ng: Nilegate

  beforeAll(async () => {
    database = await openTestDatabase('pglite')
    gateway = await managementApp(database.db)
    const { operator } = await signInOperator(gateway)
    ng = new Nilegate({ baseURL: 'http://localhost/v1', accessToken: operator.token, fetch: (input, init) => gateway.app.handle(new Request(input, init)) })
  }, slowHookTimeoutMs)

  afterAll(() => database?.dispose())

  test('credits(id, params) gives one page of the credit ledger, newest first', async () => {
    const { organizationId } = await database.db.createDemoTenant({ balanceMicros: 0n })
    const added = [await ng.admin.organizations.credit(organizationId, { amount_egp: '10' }), await ng.admin.organizations.credit(organizationId, { amount_egp: '20', note: 'second' })]

    const first = await ng.admin.organizations.credits(organizationId, { limit: 1 })
    const rest = await ng.admin.organizations.credits(organizationId, { after: first.last_id! })

    expect(first).toMatchObject({ object: 'list', has_more: true, data: [{ id: added[1]!.id, kind: 'top_up', amount_egp: '20.000000', note: 'second' }] })
    expect(rest).toMatchObject({ has_more: false, data: [{ id: added[0]!.id, amount_egp: '10.000000' }] })
  })

  test('auditLogs(id, params) gives one page of the audit trail, with the filters of organization.auditLogs', async () => {
    const { organizationId } = await database.db.createDemoTenant({ balanceMicros: 0n })
    const credit = await ng.admin.organizations.credit(organizationId, { amount_egp: '5' })
    await ng.admin.organizations.suspend(organizationId, { reason: 'unpaid' })

    const credits = await ng.admin.organizations.auditLogs(organizationId, { actions: ['credit.added'] })
    const newest = await ng.admin.organizations.auditLogs(organizationId, { limit: 1, effective_at: { gte: credit.created_at } })

    expect(credits.data.map((record) => [record.type, record.target.id])).toEqual([['credit.added', credit.id]])
    expect(newest).toMatchObject({ has_more: true, data: [{ type: 'organization.suspended' }] })
  })
})
