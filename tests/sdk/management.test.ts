import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Nilegate, NilegateError, type Project } from '../../sdk/src'
import { rejectionOf } from '../e2e/sdk-client'
import { waitFor } from '../support/wait-for'
import { openTestDatabase, slowHookTimeoutMs, type TestDatabase } from '../support/databases'
import { managementApp, type SignedInUser } from '../support/management-app'
import { grantCredit } from '../support/project-keys'
import { chatModel } from '../support/test-app'

describe('the management API through the SDK', () => {
  let database: TestDatabase
  let gateway: Awaited<ReturnType<typeof managementApp>>
  let owner: SignedInUser
  let orgId: string

  beforeAll(async () => {
    database = await openTestDatabase('pglite')
    gateway = await managementApp(database.db)
    owner = await gateway.signUp()
    orgId = await gateway.createOrganization(owner)
  }, slowHookTimeoutMs)

  afterAll(() => database?.dispose())

  /** A client of the in-process app; `fetch` may stand in front of it. */
  const client = (options: { accessToken?: string; organization?: string; project?: string; fetch?: (request: Request) => Promise<Response> } = {}) => {
    const send = options.fetch ?? ((request: Request) => gateway.app.handle(request))
    return new Nilegate({
      baseURL: 'http://localhost/v1',
      accessToken: options.accessToken ?? owner.token,
      organization: options.organization,
      project: options.project,
      fetch: (input, init) => send(new Request(input, init)),
    })
  }

  test('logs in, acts with the new session and logs out, after which the session is refused', async () => {
    const ng = client({ accessToken: '' })

    const session = await ng.auth.login({ email: owner.email, password: owner.password })
    const me = await ng.auth.me()
    await ng.auth.logout()
    const refused = await rejectionOf(client({ accessToken: session.access_token }).auth.me())

    expect(session).toMatchObject({ object: 'session', token_type: 'bearer', user: { email: owner.email } })
    expect(me.memberships).toEqual([expect.objectContaining({ organization_id: orgId, role: 'owner' })])
    expect(ng.accessToken).toBeNull()
    expect(refused).toBeInstanceOf(NilegateError)
    expect(refused).toMatchObject({ status: 401, code: 'token_revoked', type: 'authentication_error' })
  })

  test('lists every project along the after cursor, or one page', async () => {
    const ng = client()
    const created: Project[] = []
    for (const name of ['alpha', 'beta', 'gamma']) created.push(await ng.organization.projects.create({ name, monthly_spend_cap_egp: '25' }))

    const listed: Project[] = []
    for await (const project of ng.organization.projects.list({ limit: 2 })) listed.push(project)
    const first = await ng.organization.projects.page({ limit: 2 })
    const second = await ng.organization.projects.page({ limit: 2, after: first.last_id! })

    expect(listed.map((project) => project.id).sort()).toEqual(created.map((project) => project.id).sort())
    expect(first).toMatchObject({ object: 'list', has_more: true })
    expect([...first.data, ...second.data]).toEqual(listed)
    expect(second.has_more).toBe(false)
  })

  test('creates, lists, changes and revokes the API keys of a project', async () => {
    const ng = client()
    const project = await ng.organization.projects.create({ name: 'keys' })
    const keys = ng.organization.projects.apiKeys(project.id)

    const created = await keys.create({ name: 'server', rpm_limit: 600, ip_allow_list: ['203.0.113.0/24'] })
    const updated = await keys.update(created.id, { rpm_limit: 60 })
    const listed = await Array.fromAsync(keys.list())
    await keys.revoke(created.id)
    const revoked = await keys.retrieve(created.id)

    expect(created.value).toStartWith('sk-')
    expect(updated).toMatchObject({ id: created.id, rpm_limit: 60, ip_allow_list: ['203.0.113.0/24'] })
    expect(listed.map((key) => key.id)).toEqual([created.id])
    expect(revoked.status).toBe('revoked')
  })

  test('a POST whose answer was lost is retried with its Idempotency-Key and happens once', async () => {
    let lost = false
    const ng = client({
      fetch: async (request) => {
        const answer = await gateway.app.handle(request)
        if (request.method === 'POST' && !lost) {
          lost = true
          throw new TypeError('the connection was reset')
        }
        return answer
      },
    })

    const project = await ng.organization.projects.create({ name: 'exactly once' })

    const named = (await Array.fromAsync(ng.organization.projects.list())).filter((candidate) => candidate.name === 'exactly once')
    expect(named).toEqual([project])
  })

  test('members, invites, usage, balance and the audit trail', async () => {
    const ng = client()

    const invite = await ng.organization.invites.create({ email: 'new.member@example.test', role: 'member' })
    const invites = await Array.fromAsync(ng.organization.invites.list())
    const users = await Array.fromAsync(ng.organization.users.list())
    const usage = await ng.organization.usage.page({ start_time: Math.floor(Date.now() / 1000) - 86_400, group_by: ['model'] })
    const balance = await ng.organization.balance.retrieve()
    const created = await Array.fromAsync(ng.organization.auditLogs.list({ actions: ['invite.created'], limit: 1 }))

    expect(invites.map((item) => item.id)).toContain(invite.id)
    expect(users).toEqual([expect.objectContaining({ id: owner.user.id, role: 'owner' })])
    expect(usage).toMatchObject({ object: 'page', has_more: false })
    expect(balance).toMatchObject({ object: 'organization.balance', organization_id: orgId })
    expect(created.map((record) => record.target.id)).toEqual([invite.id])
  })

  test('tries a model on the playground with the session, plain and streamed, billed to the chosen project', async () => {
    await grantCredit(gateway.db, orgId)
    const project = await client().organization.projects.create({ name: 'playground' })
    const ng = client({ project: project.id })
    const messages = [{ role: 'user' as const, content: 'Hello there' }]

    const completion = await ng.playground.chat.completions.create({ model: chatModel, messages, max_tokens: 16 })
    const stream = await ng.playground.chat.completions.create({ model: chatModel, messages, max_tokens: 16, stream: true })
    let streamed = ''
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? ''
    const withoutProject = await rejectionOf(client().playground.chat.completions.create({ model: chatModel, messages }))

    expect(completion).toMatchObject({ object: 'chat.completion', model: chatModel })
    expect(streamed.length).toBeGreaterThan(0)
    expect(stream.usage?.completion_tokens).toBeGreaterThan(0)
    expect(withoutProject).toMatchObject({ status: 400, code: 'invalid_request', param: 'OpenAI-Project' })
    await waitFor(() => gateway.usage.filter((event) => event.projectId === project.id).length === 2, { what: 'both playground requests to be recorded' })
    expect(gateway.usage.filter((event) => event.projectId === project.id).map((event) => event.keyId)).toEqual([`playground:${owner.user.id}`, `playground:${owner.user.id}`])
  })

  test('operators: organizations, credit, suspension, users, model retirements and deployments', async () => {
    const operator = await gateway.signUp({ operator: true })
    const other = await gateway.signUp()
    const ops = client({ accessToken: operator.token })

    const listed = await Array.fromAsync(ops.admin.organizations.list({ limit: 1 }))
    const credit = await ops.admin.organizations.credit(orgId, { amount_egp: '12.5', note: 'from the SDK test' })
    const suspended = await ops.admin.organizations.suspend(orgId, { reason: 'checking the SDK' })
    const reactivated = await ops.admin.organizations.reactivate(orgId)
    const updated = await ops.admin.organizations.update(orgId, { plan_tier: 'team' })
    const retrieved = await ops.admin.organizations.retrieve(orgId)
    const found = await Array.fromAsync(ops.admin.users.list({ email: other.email }))
    const disabled = await ops.admin.users.disable(other.user.id)
    const enabled = await ops.admin.users.enable(other.user.id)
    const retired = await ops.admin.models.retire(chatModel, { retires_on: '2999-12-31' })
    const cancelled = await ops.admin.models.cancelRetirement(chatModel)
    const deployment = await ops.admin.deployments.create({ model_id: chatModel, provider: 'simulator' })
    const deployments = await ops.admin.deployments.list({ model_id: chatModel })
    const deleted = await ops.admin.deployments.delete(deployment.id)
    const reload = await ops.admin.reloadCatalog()
    const notOperator = await rejectionOf(client().admin.organizations.page())

    expect(listed.map((organization) => organization.id)).toContain(orgId)
    expect(credit).toMatchObject({ organization_id: orgId })
    expect([suspended.status, reactivated.status, updated.plan_tier, retrieved.plan_tier]).toEqual(['suspended', 'active', 'team', 'team'])
    expect(found.map((user) => user.id)).toEqual([other.user.id])
    expect([disabled.status, enabled.status]).toEqual(['disabled', 'active'])
    expect([retired.id, cancelled]).toEqual([chatModel, { object: 'model.retirement', id: chatModel, deleted: true }])
    expect(deployments.data.map((item) => item.id)).toContain(deployment.id)
    expect(deleted).toEqual({ object: 'deployment.deleted', id: deployment.id, deleted: true })
    expect(reload).toEqual({ object: 'catalog.reload', requested: true })
    expect(notOperator).toMatchObject({ status: 403, code: 'permission_denied' })
  })

  test('refusals are NilegateErrors with their catalog codes', async () => {
    const reader = await gateway.addMember(orgId, 'reader')

    const denied = await rejectionOf(client({ accessToken: reader.token }).organization.projects.create({ name: 'not mine' }))
    const elsewhere = await rejectionOf(client({ organization: 'org_elsewhere' }).organization.retrieve())

    expect(denied).toMatchObject({ status: 403, code: 'permission_denied', type: 'permission_denied' })
    expect(elsewhere).toMatchObject({ status: 401, code: 'not_a_member' })
  })
})
