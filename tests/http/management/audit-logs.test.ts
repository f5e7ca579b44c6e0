import { beforeAll, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { appendAudit } from '../../../server/adapters/postgres/governance/common'
import { auditLogs, memberships } from '../../../server/adapters/postgres/schema'
import { newId } from '../../../server/core/api-keys'
import type { AuditActor } from '../../../server/core/governance/audit'
import type { MembershipRole } from '../../../server/core/governance/roles'
import { describeEachDatabase, slowHookTimeoutMs } from '../../support/databases'
import { managementApp, type SignedInUser } from '../../support/management-app'

const path = '/v1/organization/audit_logs'
/** Unix seconds of the first fixture record; the others follow 10 s apart. */
const t0 = 1_700_000_000

/** The error a promise rejects with, with the causes drizzle wraps database errors in. */
async function failureOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    const messages: string[] = []
    for (let current = error as { message?: string; cause?: unknown } | undefined; current; current = current.cause as typeof current) messages.push(String(current.message))
    return messages.join(' <- ')
  }
  throw new Error('the promise did not reject')
}

describeEachDatabase('GET /v1/organization/audit_logs', (context) => {
  /** An organization created over HTTP by its owner, and a way to add people to it with a role. */
  async function organizationWithOwner() {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    async function join(role: MembershipRole): Promise<SignedInUser> {
      const user = await gateway.signUp()
      await context.current.db.drizzle.insert(memberships).values({ orgId, userId: user.user.id, role })
      return user
    }
    const list = (query = '', user: SignedInUser = owner) => gateway.send('GET', `${path}${query}`, { token: user.token, headers: { 'openai-organization': orgId } })
    return { gateway, owner, orgId, join, list }
  }

  /** Appends a record at a chosen time: inserting is all the database allows on the audit trail. */
  async function recordAt(orgId: string, effectiveAt: number, record: { actorId: string; action: string; targetId: string; projectId: string }): Promise<string> {
    const id = newId('audit')
    const { actorId, action, targetId, projectId } = record
    await context.current.db.drizzle.insert(auditLogs).values({ id, orgId, projectId, actorType: 'user', actorId, action, targetType: action.split('.')[0]!, targetId, createdAt: new Date(effectiveAt * 1000) })
    return id
  }

  const ids = (response: { json: { data: Array<{ id: string }> } }) => response.json.data.map((record) => record.id)

  test('lists the records of creating an organization over HTTP, newest first, in the OpenAI shapes', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const server = gateway.listen()
    const before = Math.floor(Date.now() / 1000)
    const created = await fetch(`${server.url}/v1/organizations`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Audited' }) })
    server.stop()
    const orgId = ((await created.json()) as { id: string }).id
    const requestId = created.headers.get('x-request-id')

    const response = await gateway.send('GET', path, { token: owner.token, headers: { 'openai-organization': orgId } })

    expect(response.status).toBe(200)
    const actor = { type: 'user', id: owner.user.id, email: owner.email }
    const common = { object: 'organization.audit_log', id: expect.stringMatching(/^audit_/), effective_at: expect.any(Number), actor, project_id: null, ip_address: '127.0.0.1', request_id: requestId }
    expect(response.json).toEqual({
      object: 'list',
      data: [
        { ...common, type: 'member.added', target: { type: 'user', id: owner.user.id }, changes: { before: null, after: { role: 'owner' } } },
        { ...common, type: 'organization.created', target: { type: 'organization', id: orgId }, changes: { before: null, after: { name: 'Audited' } } },
      ],
      first_id: response.json.data[0].id,
      last_id: response.json.data[1].id,
      has_more: false,
    })
    expect(response.json.data[1].effective_at).toBeGreaterThanOrEqual(before)
    expect(response.json.data[1].effective_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000))
  })

  test('records appended through the repository inside a transaction are listed with their actor and changes', async () => {
    const { orgId, list } = await organizationWithOwner()
    const actor: AuditActor = { type: 'api_key', id: 'key_1', email: null, ip: '203.0.113.9', requestId: 'req_1' }

    await context.current.db.drizzle.transaction((tx) => appendAudit(tx, actor, { orgId, projectId: 'proj_1', action: 'api_key.updated', targetType: 'api_key', targetId: 'key_1', before: { rpm_limit: 10 }, after: { rpm_limit: 20 } }))
    const response = await list('?limit=1')

    expect(response.json.data).toEqual([
      {
        object: 'organization.audit_log',
        id: expect.stringMatching(/^audit_/),
        type: 'api_key.updated',
        effective_at: expect.any(Number),
        actor: { type: 'api_key', id: 'key_1', email: null },
        target: { type: 'api_key', id: 'key_1' },
        project_id: 'proj_1',
        changes: { before: { rpm_limit: 10 }, after: { rpm_limit: 20 } },
        ip_address: '203.0.113.9',
        request_id: 'req_1',
      },
    ])
    expect(response.json.has_more).toBe(true)
  })

  describeFilters()

  function describeFilters() {
    // One organization with four records at known times, after the two of its creation.
    let fixture: Awaited<ReturnType<typeof organizationWithOwner>> & { r: string[]; creation: string[] }
    beforeAll(async () => {
      const organization = await organizationWithOwner()
      const creation = ids(await organization.list()).toReversed()
      const r = [
        await recordAt(organization.orgId, t0, { actorId: 'user_alice', action: 'project.created', targetId: 'proj_1', projectId: 'proj_1' }),
        // Half a second into its second: effective_at counts whole seconds.
        await recordAt(organization.orgId, t0 + 10.5, { actorId: 'user_bob', action: 'api_key.created', targetId: 'key_1', projectId: 'proj_1' }),
        await recordAt(organization.orgId, t0 + 20, { actorId: 'user_alice', action: 'api_key.revoked', targetId: 'key_1', projectId: 'proj_1' }),
        await recordAt(organization.orgId, t0 + 30, { actorId: 'user_bob', action: 'project.updated', targetId: 'proj_2', projectId: 'proj_2' }),
      ]
      fixture = { ...organization, r, creation }
    }, slowHookTimeoutMs)

    test.each([
      ['actor_ids[]=user_alice', [3, 1]],
      ['actor_ids=user_alice&actor_ids=user_bob', [4, 3, 2, 1]],
      ['actor_ids%5B%5D=user_bob', [4, 2]],
      ['actions[]=api_key.created&actions[]=api_key.revoked', [3, 2]],
      ['event_types[]=project.updated', [4]],
      ['target_ids[]=key_1', [3, 2]],
      ['resource_ids[]=proj_2', [4]],
      ['project_ids[]=proj_1&actions[]=project.created', [1]],
      [`effective_at[gte]=${t0 + 10}&effective_at[lt]=${t0 + 30}`, [3, 2]],
      [`effective_at[gt]=${t0 + 10}&effective_at[lte]=${t0 + 30}`, [4, 3]],
      [`effective_at[lte]=${t0 + 10}`, [2, 1]],
      [`effective_at[gt]=${t0}&actor_ids[]=user_alice`, [3]],
      ['actor_ids[]=nobody', []],
    ])('?%s keeps the matching records', async (query, expected) => {
      const response = await fixture.list(`?${query}`)

      expect(response.status).toBe(200)
      expect(ids(response)).toEqual(expected.map((n) => fixture.r[n - 1]!))
      expect(response.json).toMatchObject({ first_id: fixture.r[expected[0]! - 1] ?? null, last_id: fixture.r[expected.at(-1)! - 1] ?? null, has_more: false })
    })

    test('pages with after and before, and has_more says whether records lie beyond', async () => {
      const [r1, r2, r3, r4] = fixture.r
      const all = [r4, r3, r2, r1, ...fixture.creation.toReversed()]

      const first = await fixture.list('?limit=4')
      const second = await fixture.list(`?limit=4&after=${first.json.last_id}`)
      const newer = await fixture.list(`?limit=2&before=${fixture.creation[1]}`)
      const newest = await fixture.list(`?before=${r3}`)
      const walked: string[] = []
      for (let cursor = ''; ; ) {
        const page = await fixture.list(`?limit=1${cursor}`)
        walked.push(...ids(page))
        if (!page.json.has_more) break
        cursor = `&after=${page.json.last_id}`
      }

      expect([ids(first), first.json.has_more]).toEqual([all.slice(0, 4), true])
      expect([ids(second), second.json.has_more]).toEqual([all.slice(4), false])
      expect([ids(newer), newer.json.has_more]).toEqual([[r2, r1], true])
      expect([ids(newest), newest.json.has_more]).toEqual([[r4], false])
      expect(walked).toEqual(all)
    })

    test.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['effective_at[gt]=-1', 'effective_at[gt]'],
      ['effective_at[lte]=1.5', 'effective_at[lte]'],
      ['effective_at[eq]=1', 'effective_at[eq]'],
      ['actor_emails[]=a@example.test', 'actor_emails[]'],
      ['after=audit_unknown', 'after'],
      ['before=audit_unknown', 'before'],
      ['after=a&before=b', 'before'],
    ])('?%s is 400 invalid_request naming %s', async (query, param) => {
      const response = await fixture.list(`?${query}`)

      expect(response.status).toBe(400)
      expect(response.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param })
    })
  }

  test('returns 20 records unless limit says otherwise', async () => {
    const { orgId, list } = await organizationWithOwner()
    for (let n = 0; n < 20; n++) await recordAt(orgId, t0 + n, { actorId: 'user_alice', action: 'project.updated', targetId: 'proj_1', projectId: 'proj_1' })

    const page = await list()
    const all = await list('?limit=100')

    expect([page.json.data.length, page.json.has_more]).toEqual([20, true])
    expect([all.json.data.length, all.json.has_more]).toEqual([22, false])
  })

  test('owners and admins may read the trail; members and readers get 403 permission_denied', async () => {
    const { join, list } = await organizationWithOwner()
    const people = { admin: await join('admin'), member: await join('member'), reader: await join('reader') }

    const statuses = Object.fromEntries(await Promise.all(Object.entries(people).map(async ([role, user]) => [role, await list('', user)] as const)))

    expect(statuses.admin!.status).toBe(200)
    expect(statuses.admin!.json.data.length).toBeGreaterThan(0)
    expect([statuses.member!.status, statuses.member!.json.error.code]).toEqual([403, 'permission_denied'])
    expect([statuses.reader!.status, statuses.reader!.json.error.code]).toEqual([403, 'permission_denied'])
  })

  test("never shows another organization's records, nor a user's sign-up and logins from before they joined", async () => {
    const mine = await organizationWithOwner()
    const theirs = await organizationWithOwner()
    const theirRecords = ids(await theirs.list())
    const secondOrg = await mine.gateway.createOrganization(mine.owner)

    const everything = await mine.list('?limit=100')
    const byTheirTarget = await mine.list(`?target_ids[]=${theirs.orgId}`)
    const byTheirActor = await mine.list(`?actor_ids[]=${theirs.owner.user.id}`)
    const personal = await mine.list('?actions[]=user.created&actions[]=login.succeeded')
    const theirCursor = await mine.list(`?after=${theirRecords[0]}`)
    const otherOrgOfMine = await mine.gateway.send('GET', path, { token: mine.owner.token, headers: { 'openai-organization': secondOrg } })
    const notMember = await mine.gateway.send('GET', path, { token: mine.owner.token, headers: { 'openai-organization': theirs.orgId } })

    expect(everything.json.data.map((record: { target: { id: string } }) => record.target.id).toSorted()).toEqual([mine.orgId, mine.owner.user.id].toSorted())
    expect([ids(byTheirTarget), ids(byTheirActor), ids(personal)]).toEqual([[], [], []])
    expect([theirCursor.status, theirCursor.json.error.param, theirCursor.text.includes(theirs.orgId)]).toEqual([400, 'after', false])
    expect(otherOrgOfMine.json.data.map((record: { target: { id: string } }) => record.target.id)).toContain(secondOrg)
    expect(ids(otherOrgOfMine).some((id: string) => ids(everything).includes(id))).toBe(false)
    expect([notMember.status, notMember.json.error.code]).toEqual([401, 'not_a_member'])
  })

  test('no route changes or deletes records, and the database refuses UPDATE, DELETE and TRUNCATE', async () => {
    const { gateway, owner, orgId, list } = await organizationWithOwner()
    const [record] = (await list('?limit=1')).json.data
    const as = { token: owner.token, headers: { 'openai-organization': orgId }, body: {} }
    const db = context.current.db.drizzle

    const routes = await Promise.all([
      gateway.send('POST', path, as),
      gateway.send('DELETE', path, { ...as, body: undefined }),
      gateway.send('PATCH', path, as),
      gateway.send('DELETE', `${path}/${record.id}`, { ...as, body: undefined }),
      gateway.send('POST', `${path}/${record.id}`, as),
    ])
    const update = await failureOf(db.update(auditLogs).set({ action: 'nothing.happened' }).where(eq(auditLogs.id, record.id)))
    const remove = await failureOf(db.delete(auditLogs).where(eq(auditLogs.id, record.id)))
    const truncate = await failureOf(db.execute(sql`truncate table audit_logs`))
    const after = await list('?limit=1')

    expect(routes.map((response) => response.status)).toEqual([405, 405, 405, 404, 404])
    expect([update, remove, truncate]).toEqual([expect.stringContaining('audit_logs is append-only'), expect.stringContaining('audit_logs is append-only'), expect.stringContaining('audit_logs is append-only')])
    expect(after.json.data).toEqual([record])
  })
})
