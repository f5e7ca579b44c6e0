import { expect, test } from 'bun:test'
import { randomBase62 } from '../../../server/core/api-keys'
import type { MembershipRole } from '../../../server/core/governance/roles'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, type SignedInUser } from '../../support/management-app'
import { createKey, createProject, grantCredit } from '../../support/project-keys'
import { chatRequest } from '../../support/test-app'

type Gateway = Awaited<ReturnType<typeof managementApp>>
type Caller = MembershipRole | 'operator'
interface RouteRequest {
  method: string
  path: string
  body?: unknown
  headers?: Record<string, string>
}

/** One organization with a member of each role, a project, a key, an invite and a spare member. */
async function tenant(gateway: Gateway) {
  const owner = await gateway.signUp()
  const orgId = await gateway.createOrganization(owner)
  const members: Record<MembershipRole, SignedInUser> = {
    owner,
    admin: await gateway.addMember(orgId, 'admin'),
    member: await gateway.addMember(orgId, 'member'),
    reader: await gateway.addMember(orgId, 'reader'),
  }
  await grantCredit(gateway.db, orgId)
  const project = await createProject(gateway, owner)
  const key = await createKey(gateway, owner, project.id)
  const invite = await gateway.send('POST', '/v1/organization/invites', { token: owner.token, body: { email: `invitee-${randomBase62(8).toLowerCase()}@example.test`, role: 'member' } })
  return { orgId, members, project, key, inviteId: invite.json.id as string }
}

type Tenant = Awaited<ReturnType<typeof tenant>>

/**
 * Every management route, with what it needs. Routes that change or remove something make a fresh
 * target for each call, so the rows of the matrix do not depend on each other.
 */
function routes(gateway: Gateway, t: Tenant) {
  const fresh = {
    member: async () => (await gateway.addMember(t.orgId, 'reader')).user.id,
    project: async () => (await createProject(gateway, t.members.owner)).id as string,
    key: async () => (await createKey(gateway, t.members.owner, t.project.id)).id as string,
    invite: async () => {
      const response = await gateway.send('POST', '/v1/organization/invites', { token: t.members.owner.token, body: { email: `fresh-${randomBase62(8).toLowerCase()}@example.test`, role: 'reader' } })
      return response.json.id as string
    },
  }
  const name = () => `Name ${randomBase62(8)}`
  const p = `/v1/organization/projects/${t.project.id}`
  return {
    'GET /v1/organization': async () => ({ method: 'GET', path: '/v1/organization' }),
    'POST /v1/organization': async () => ({ method: 'POST', path: '/v1/organization', body: { name: name() } }),
    'GET /v1/organization/users': async () => ({ method: 'GET', path: '/v1/organization/users' }),
    'GET /v1/organization/users/{id}': async () => ({ method: 'GET', path: `/v1/organization/users/${t.members.reader.user.id}` }),
    'POST /v1/organization/users/{id}': async () => ({ method: 'POST', path: `/v1/organization/users/${await fresh.member()}`, body: { role: 'member' } }),
    'DELETE /v1/organization/users/{id}': async () => ({ method: 'DELETE', path: `/v1/organization/users/${await fresh.member()}` }),
    'GET /v1/organization/invites': async () => ({ method: 'GET', path: '/v1/organization/invites' }),
    'POST /v1/organization/invites': async () => ({ method: 'POST', path: '/v1/organization/invites', body: { email: `new-${randomBase62(8).toLowerCase()}@example.test`, role: 'member' } }),
    'GET /v1/organization/invites/{id}': async () => ({ method: 'GET', path: `/v1/organization/invites/${t.inviteId}` }),
    'DELETE /v1/organization/invites/{id}': async () => ({ method: 'DELETE', path: `/v1/organization/invites/${await fresh.invite()}` }),
    'GET /v1/organization/projects': async () => ({ method: 'GET', path: '/v1/organization/projects' }),
    'POST /v1/organization/projects': async () => ({ method: 'POST', path: '/v1/organization/projects', body: { name: name() } }),
    'GET /v1/organization/projects/{id}': async () => ({ method: 'GET', path: p }),
    'POST /v1/organization/projects/{id}': async () => ({ method: 'POST', path: `/v1/organization/projects/${await fresh.project()}`, body: { name: name() } }),
    'POST /v1/organization/projects/{id}/archive': async () => ({ method: 'POST', path: `/v1/organization/projects/${await fresh.project()}/archive` }),
    'GET .../api_keys': async () => ({ method: 'GET', path: `${p}/api_keys` }),
    'POST .../api_keys': async () => ({ method: 'POST', path: `${p}/api_keys`, body: { name: name() } }),
    'GET .../api_keys/{id}': async () => ({ method: 'GET', path: `${p}/api_keys/${t.key.id}` }),
    'POST .../api_keys/{id}': async () => ({ method: 'POST', path: `${p}/api_keys/${await fresh.key()}`, body: { name: name() } }),
    'DELETE .../api_keys/{id}': async () => ({ method: 'DELETE', path: `${p}/api_keys/${await fresh.key()}` }),
    'GET /v1/organization/audit_logs': async () => ({ method: 'GET', path: '/v1/organization/audit_logs' }),
    'GET /v1/organization/usage': async () => ({ method: 'GET', path: '/v1/organization/usage?start_time=0&end_time=86400' }),
    'GET /v1/organization/balance': async () => ({ method: 'GET', path: '/v1/organization/balance' }),
    'POST /v1/playground/chat/completions': async () => ({ method: 'POST', path: '/v1/playground/chat/completions', body: chatRequest(), headers: { 'openai-project': t.project.id } }),
    'GET /v1/admin/organizations': async () => ({ method: 'GET', path: '/v1/admin/organizations' }),
    'POST /v1/admin/organizations/{id}/suspend': async () => ({ method: 'POST', path: `/v1/admin/organizations/${t.orgId}/suspend`, body: {} }),
    'POST /v1/admin/organizations/{id}/credits': async () => ({ method: 'POST', path: `/v1/admin/organizations/${t.orgId}/credits`, body: { amount_egp: '1' }, headers: { 'idempotency-key': randomBase62(12) } }),
    'GET /v1/admin/users': async () => ({ method: 'GET', path: '/v1/admin/users' }),
  } satisfies Record<string, () => Promise<RouteRequest>>
}

type RouteName = keyof ReturnType<typeof routes>

const ok = (status: number) => ({ status, code: null })
const denied = { status: 403, code: 'permission_denied' }
const readable = { owner: ok(200), admin: ok(200), member: ok(200), reader: ok(200) }
const adminsOnly = (status: number) => ({ owner: ok(status), admin: ok(status), member: denied, reader: denied })
const operatorOnly = (status: number) => ({ owner: denied, admin: denied, member: denied, reader: denied, operator: ok(status) })

/** What each role gets on each route: the role table of server/core/governance/roles.ts, as seen over HTTP. */
const expected: Record<RouteName, Partial<Record<Caller, { status: number; code: string | null }>>> = {
  'GET /v1/organization': readable,
  'POST /v1/organization': adminsOnly(200),
  'GET /v1/organization/users': readable,
  'GET /v1/organization/users/{id}': readable,
  'POST /v1/organization/users/{id}': adminsOnly(200),
  'DELETE /v1/organization/users/{id}': adminsOnly(200),
  'GET /v1/organization/invites': readable,
  'POST /v1/organization/invites': adminsOnly(201),
  'GET /v1/organization/invites/{id}': readable,
  'DELETE /v1/organization/invites/{id}': adminsOnly(200),
  'GET /v1/organization/projects': readable,
  'POST /v1/organization/projects': adminsOnly(201),
  'GET /v1/organization/projects/{id}': readable,
  'POST /v1/organization/projects/{id}': adminsOnly(200),
  'POST /v1/organization/projects/{id}/archive': adminsOnly(200),
  'GET .../api_keys': readable,
  'POST .../api_keys': { owner: ok(201), admin: ok(201), member: ok(201), reader: denied },
  'GET .../api_keys/{id}': readable,
  'POST .../api_keys/{id}': { owner: ok(200), admin: ok(200), member: ok(200), reader: denied },
  'DELETE .../api_keys/{id}': { owner: ok(200), admin: ok(200), member: ok(200), reader: denied },
  'GET /v1/organization/audit_logs': adminsOnly(200),
  'GET /v1/organization/usage': readable,
  'GET /v1/organization/balance': readable,
  'POST /v1/playground/chat/completions': { owner: ok(200), admin: ok(200), member: ok(200), reader: denied },
  'GET /v1/admin/organizations': operatorOnly(200),
  'POST /v1/admin/organizations/{id}/suspend': operatorOnly(200),
  'POST /v1/admin/organizations/{id}/credits': operatorOnly(201),
  'GET /v1/admin/users': operatorOnly(200),
}

describeEachDatabase('role x route matrix', (context) => {
  test('each role of an organization gets exactly its permissions on every management route', async () => {
    const gateway = await managementApp(context.current.db)
    const t = await tenant(gateway)
    const operator = await gateway.signUp({ operator: true })
    const table = routes(gateway, t)
    const actual: Record<string, Partial<Record<Caller, { status: number; code: string | null }>>> = {}
    for (const [route, roles] of Object.entries(expected) as [RouteName, Partial<Record<Caller, unknown>>][]) {
      actual[route] = {}
      // The operator's suspension runs last: it would freeze the organization's other writes.
      for (const caller of Object.keys(roles) as Caller[]) {
        const request: RouteRequest = await table[route]()
        const token = caller === 'operator' ? operator.token : t.members[caller as MembershipRole].token
        const response = await gateway.send(request.method, request.path, { token, body: request.body, headers: request.headers })
        actual[route][caller] = { status: response.status, code: response.status < 400 ? null : response.json?.error?.code }
      }
    }
    expect(actual).toEqual(expected)
  }, 60_000)

  test('a second organization never sees the first one: 404 for its ids, not_a_member and project_not_in_org for its headers', async () => {
    const gateway = await managementApp(context.current.db)
    const first = await tenant(gateway)
    const second = await tenant(gateway)
    const stranger = second.members.owner
    const p = `/v1/organization/projects/${first.project.id}`
    for (const [method, path] of [
      ['GET', p],
      ['POST', `${p}/archive`],
      ['GET', `${p}/api_keys`],
      ['GET', `${p}/api_keys/${first.key.id}`],
      ['DELETE', `${p}/api_keys/${first.key.id}`],
      ['GET', `/v1/organization/users/${first.members.reader.user.id}`],
      ['DELETE', `/v1/organization/users/${first.members.reader.user.id}`],
      ['GET', `/v1/organization/invites/${first.inviteId}`],
      ['DELETE', `/v1/organization/invites/${first.inviteId}`],
    ] as const) {
      const response = await gateway.send(method, path, { token: stranger.token })
      expect({ method, path, status: response.status, code: response.json?.error?.code }).toEqual({ method, path, status: 404, code: 'not_found' })
    }
    const asOther = await gateway.send('GET', '/v1/organization/projects', { token: stranger.token, headers: { 'openai-organization': first.orgId } })
    expect([asOther.status, asOther.json.error.code]).toEqual([401, 'not_a_member'])
    const otherProject = await gateway.send('GET', '/v1/organization/projects', { token: stranger.token, headers: { 'openai-project': first.project.id } })
    expect([otherProject.status, otherProject.json.error.code]).toEqual([403, 'project_not_in_org'])

    const lists = {
      projects: await gateway.send('GET', '/v1/organization/projects', { token: stranger.token }),
      keys: await gateway.send('GET', `/v1/organization/projects/${second.project.id}/api_keys`, { token: stranger.token }),
      users: await gateway.send('GET', '/v1/organization/users', { token: stranger.token }),
      invites: await gateway.send('GET', '/v1/organization/invites', { token: stranger.token }),
      audit: await gateway.send('GET', '/v1/organization/audit_logs?limit=100', { token: stranger.token }),
    }
    const seen = JSON.stringify(Object.values(lists).map((response) => response.json))
    for (const id of [first.orgId, first.project.id, first.key.id, first.inviteId, first.members.owner.user.id, first.members.reader.user.id]) expect(seen).not.toContain(id)
    expect(lists.audit.json.data.length).toBeGreaterThan(0)
  }, 60_000)
})
