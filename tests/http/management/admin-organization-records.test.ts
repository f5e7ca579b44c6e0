import { expect, test } from 'bun:test'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, signInOperator } from '../../support/management-app'

describeEachDatabase("an organization's credits and audit trail, for operators", (context) => {
  /** A gateway with a signed-in operator, and a demo tenant (owner, project, key) holding 100 EGP of demo credit. */
  async function operatorAndTenant() {
    const gateway = await managementApp(context.current.db)
    const { operator, admin } = await signInOperator(gateway)
    const tenant = await context.current.db.createDemoTenant({ balanceMicros: 100_000_000n })
    const topUp = (orgId: string, amount: string, note?: string) =>
      admin('POST', `/v1/admin/organizations/${orgId}/credits`, { body: { amount_egp: amount, note }, headers: { 'idempotency-key': crypto.randomUUID() } })
    return { gateway, operator, admin, tenant, topUp }
  }

  const ids = (response: { json: { data: Array<{ id: string }> } }) => response.json.data.map((item) => item.id)

  test('only operators read them: 403 permission_denied for members of the organization too, 401 without a session', async () => {
    const { gateway, tenant } = await operatorAndTenant()
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)

    const asOwner = await Promise.all(['credits', 'audit_logs'].map((records) => gateway.send('GET', `/v1/admin/organizations/${orgId}/${records}`, { token: owner.token })))
    const anonymous = await gateway.send('GET', `/v1/admin/organizations/${tenant.organizationId}/credits`)

    expect(asOwner.map((response) => [response.status, response.json.error.code])).toEqual([
      [403, 'permission_denied'],
      [403, 'permission_denied'],
    ])
    expect([anonymous.status, anonymous.json.error.code]).toEqual([401, 'missing_auth_header'])
  })

  test('lists the credit ledger newest first, page by page, each with its kind and who added it', async () => {
    const { admin, operator, tenant, topUp } = await operatorAndTenant()
    const other = await operatorAndTenant()
    const first = await topUp(tenant.organizationId, '250', 'Bank transfer 1')
    const second = await topUp(tenant.organizationId, '12.5')
    await other.topUp(other.tenant.organizationId, '99')

    const all = await admin('GET', `/v1/admin/organizations/${tenant.organizationId}/credits`)
    const page1 = await admin('GET', `/v1/admin/organizations/${tenant.organizationId}/credits?limit=2`)
    const page2 = await admin('GET', `/v1/admin/organizations/${tenant.organizationId}/credits?limit=2&after=${page1.json.last_id}`)

    expect(all.status).toBe(200)
    expect(all.json).toMatchObject({ object: 'list', has_more: false })
    expect(all.json.data.slice(0, 2)).toEqual([
      {
        object: 'organization.credit',
        id: second.json.id,
        organization_id: tenant.organizationId,
        kind: 'top_up',
        amount_egp: '12.500000',
        note: null,
        actor: { type: 'operator', id: operator.user.id, email: operator.email },
        created_at: second.json.created_at,
      },
      expect.objectContaining({ id: first.json.id, kind: 'top_up', amount_egp: '250.000000', note: 'Bank transfer 1', actor: expect.objectContaining({ id: operator.user.id }) }),
    ])
    expect(all.json.data[2]).toMatchObject({ kind: 'demo_credit', amount_egp: '100.000000', actor: null })
    expect(all.json.data).toHaveLength(3)
    expect([page1.json.has_more, page2.json.has_more]).toEqual([true, false])
    expect([...ids(page1), ...ids(page2)]).toEqual(ids(all))
  })

  test("answers 404 for an unknown organization, 400 for a cursor of another organization's list or a bad limit, 405 for other methods", async () => {
    const { admin, tenant, topUp } = await operatorAndTenant()
    const elsewhere = await operatorAndTenant()
    const foreign = await elsewhere.topUp(elsewhere.tenant.organizationId, '5')
    await topUp(tenant.organizationId, '5')

    const unknown = await Promise.all(['credits', 'audit_logs'].map((records) => admin('GET', `/v1/admin/organizations/org_unknown/${records}`)))
    const foreignCursor = await admin('GET', `/v1/admin/organizations/${tenant.organizationId}/credits?after=${foreign.json.id}`)
    const badLimit = await admin('GET', `/v1/admin/organizations/${tenant.organizationId}/credits?limit=0`)
    const wrongMethod = await admin('DELETE', `/v1/admin/organizations/${tenant.organizationId}/credits`)

    expect(unknown.map((response) => [response.status, response.json.error.code, response.json.error.param])).toEqual([
      [404, 'not_found', 'id'],
      [404, 'not_found', 'id'],
    ])
    expect([foreignCursor.status, foreignCursor.json.error.param]).toEqual([400, 'after'])
    expect([badLimit.status, badLimit.json.error.param]).toEqual([400, 'limit'])
    expect([wrongMethod.status, wrongMethod.headers.get('allow')]).toEqual([405, 'GET, POST'])
  })

  test("reads the audit trail of an organization the operator is no member of, with the organization route's filters and paging", async () => {
    const { gateway, admin, tenant, topUp } = await operatorAndTenant()
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const project = await gateway.send('POST', '/v1/organization/projects', { token: owner.token, headers: { 'openai-organization': orgId }, body: { name: 'Web' } })
    const credit = await topUp(orgId, '40')
    await admin('POST', `/v1/admin/organizations/${orgId}/suspend`, { body: { reason: 'unpaid' } })
    await topUp(tenant.organizationId, '1')

    const asOperator = await admin('GET', `/v1/admin/organizations/${orgId}/audit_logs`)
    const asOwner = await gateway.send('GET', '/v1/organization/audit_logs', { token: owner.token, headers: { 'openai-organization': orgId } })
    const credits = await admin('GET', `/v1/admin/organizations/${orgId}/audit_logs?actions[]=credit.added`)
    const newest = await admin('GET', `/v1/admin/organizations/${orgId}/audit_logs?limit=1`)
    const older = await admin('GET', `/v1/admin/organizations/${orgId}/audit_logs?limit=1&after=${newest.json.last_id}`)
    const unknownFilter = await admin('GET', `/v1/admin/organizations/${orgId}/audit_logs?actor_emails[]=a@example.test`)

    expect(asOperator.status).toBe(200)
    expect(asOperator.json).toEqual(asOwner.json)
    expect(asOperator.json.data.map((record: { type: string }) => record.type)).toEqual(expect.arrayContaining(['organization.created', 'project.created', 'credit.added', 'organization.suspended']))
    expect(asOperator.json.data.map((record: { target: { id: string } }) => record.target.id)).toContain(project.json.id)
    expect(credits.json.data.map((record: { target: { id: string } }) => record.target.id)).toEqual([credit.json.id])
    expect(newest.json.data[0].type).toBe('organization.suspended')
    expect(newest.json.has_more).toBe(true)
    expect(older.json.data[0].type).toBe('credit.added')
    expect([unknownFilter.status, unknownFilter.json.error.param]).toEqual([400, 'actor_emails[]'])
  })
})
