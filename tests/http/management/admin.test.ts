import { expect, test } from 'bun:test'
import { and, eq, sql } from 'drizzle-orm'
import { auditLogs, creditTransactions, organizations } from '../../../server/adapters/postgres/schema'
import { billingMonth } from '../../../server/core/admission'
import { Catalog } from '../../../server/core/catalog'
import { followRetirements } from '../../../server/core/governance/operator'
import { loadCatalogFile } from '../../../server/catalog-file'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, signInOperator, type SignedInUser } from '../../support/management-app'
import { chatRequest, demoCatalogPath, embeddingsModel, retiredModel } from '../../support/test-app'
import { usageEvent } from '../../support/usage-events'
import { waitFor } from '../../support/wait-for'

const retiringModel = 'nile/jais-30b-chat'
const successor = 'nile/llama-3.3-70b-instruct'

describeEachDatabase('the operators API, /v1/admin/*', (context) => {
  /** A gateway with a signed-in operator, and requests made as that operator. */
  async function operatorGateway() {
    const gateway = await managementApp(context.current.db)
    const { operator, changes, admin } = await signInOperator(gateway)
    const chat = (apiKey: string, body = chatRequest()) => gateway.send('POST', '/v1/chat/completions', { token: apiKey, body })
    return { gateway, operator, changes, admin, chat }
  }

  /** An organization with an owner, a project and an API key, holding `balanceMicros`. */
  const tenant = (balanceMicros = 100_000_000n) => context.current.db.createDemoTenant({ balanceMicros })

  async function auditRecords(targetId: string) {
    const rows = await context.current.db.drizzle.select().from(auditLogs).where(eq(auditLogs.targetId, targetId)).orderBy(auditLogs.seq)
    return rows.map((row) => ({ orgId: row.orgId, actor: row.actorType, action: row.action, changes: row.changes }))
  }

  test('answers 403 permission_denied to users who are not operators, and 401 without a session', async () => {
    const { gateway } = await operatorGateway()
    const user = await gateway.signUp()

    const refused = await Promise.all(['/v1/admin/organizations', '/v1/admin/users'].map((path) => gateway.send('GET', path, { token: user.token })))
    const suspend = await gateway.send('POST', '/v1/admin/organizations/org_x/suspend', { token: user.token, body: {} })
    const anonymous = await gateway.send('GET', '/v1/admin/organizations')

    expect([...refused, suspend].map((response) => [response.status, response.json.error.code])).toEqual(Array(3).fill([403, 'permission_denied']))
    expect([anonymous.status, anonymous.json.error.code]).toEqual([401, 'missing_auth_header'])
  })

  test('answers 405 to other methods, and 400 to a body that is not a JSON object; a POST without a body reads as {}', async () => {
    const { admin } = await operatorGateway()
    const { organizationId } = await tenant()

    const wrongMethods = [await admin('GET', `/v1/admin/organizations/${organizationId}/suspend`), await admin('GET', `/v1/admin/models/${retiringModel}/retire`)]
    const notJson = await admin('POST', `/v1/admin/organizations/${organizationId}/suspend`, { body: '{"reason":' })
    const extraField = await admin('POST', `/v1/admin/organizations/${organizationId}/reactivate`, { body: { now: true } })
    const bodiless = await admin('POST', `/v1/admin/organizations/${organizationId}/reactivate`)

    expect(wrongMethods.map((response) => [response.status, response.headers.get('allow')])).toEqual([[405, 'POST'], [405, 'POST']])
    expect([notJson.status, notJson.json.error.code, extraField.status, extraField.json.error.param]).toEqual([400, 'invalid_request', 400, 'now'])
    expect([bodiless.status, bodiless.json.status]).toEqual([200, 'active'])
  })

  test('lists organizations oldest first, page by page, filtered by status; shows one; 404 for an unknown one', async () => {
    const { admin } = await operatorGateway()
    const created = [await tenant(), await tenant(), await tenant()].map((one) => one.organizationId)
    await admin('POST', `/v1/admin/organizations/${created[1]}/suspend`, { body: {} })

    const seen: string[] = []
    for (let after = ''; ; ) {
      const page = await admin('GET', `/v1/admin/organizations?limit=2${after}`)
      expect(page.json.data.length).toBeLessThanOrEqual(2)
      seen.push(...page.json.data.map((organization: { id: string }) => organization.id))
      if (!page.json.has_more) break
      after = `&after=${page.json.last_id}`
    }
    const suspended = await admin('GET', '/v1/admin/organizations?status=suspended&limit=100')
    const one = await admin('GET', `/v1/admin/organizations/${created[0]}`)
    const unknown = await admin('GET', '/v1/admin/organizations/org_unknown')
    const badCursor = await admin('GET', '/v1/admin/organizations?after=org_unknown')
    const badStatus = await admin('GET', '/v1/admin/organizations?status=gone')

    expect(seen.filter((id) => created.includes(id))).toEqual(created)
    expect(new Set(seen).size).toBe(seen.length)
    expect(suspended.json.data.map((organization: { id: string }) => organization.id)).toContain(created[1])
    expect(suspended.json.data.every((organization: { status: string }) => organization.status === 'suspended')).toBe(true)
    expect(one.json).toMatchObject({ object: 'organization', id: created[0], status: 'active', plan_tier: 'enterprise', balance_egp: '100.000000', role: null })
    expect([unknown.status, unknown.json.error.code, badCursor.json.error.param, badStatus.json.error.param]).toEqual([404, 'not_found', 'after', 'status'])
  })

  test('changes plan, RPM ceiling, allow-list and region: one audit record each, announced, and the ceiling reaches the keys', async () => {
    const { admin, chat, changes } = await operatorGateway()
    const { organizationId, apiKey } = await tenant()
    const before = await chat(apiKey)

    const changed = await admin('POST', `/v1/admin/organizations/${organizationId}`, {
      body: { plan_tier: 'team', custom_rpm_ceiling: 7, allowed_models: [chatRequest().model, successor], requires_region: 'EU' },
    })
    const unchanged = await admin('POST', `/v1/admin/organizations/${organizationId}`, { body: { plan_tier: 'team' } })
    const after = await chat(apiKey)
    const cleared = await admin('POST', `/v1/admin/organizations/${organizationId}`, { body: { custom_rpm_ceiling: null, allowed_models: null } })

    expect(before.headers.get('x-ratelimit-limit-requests')).toBe('10000')
    expect(changed.json).toMatchObject({ plan_tier: 'team', custom_rpm_ceiling: 7, allowed_models: [chatRequest().model, successor], requires_region: 'EU' })
    expect(unchanged.status).toBe(200)
    expect(after.headers.get('x-ratelimit-limit-requests')).toBe('7')
    expect(cleared.json).toMatchObject({ custom_rpm_ceiling: null, allowed_models: null, plan_tier: 'team', requires_region: 'EU' })
    expect(changes.filter((change) => change.kind === 'organization')).toEqual(Array(2).fill({ kind: 'organization', orgId: organizationId }))
    expect(await auditRecords(organizationId)).toEqual([
      { orgId: organizationId, actor: 'operator', action: 'organization.plan_changed', changes: { before: { plan_tier: 'enterprise' }, after: { plan_tier: 'team' } } },
      { orgId: organizationId, actor: 'operator', action: 'organization.rpm_ceiling_changed', changes: { before: { custom_rpm_ceiling: null }, after: { custom_rpm_ceiling: 7 } } },
      { orgId: organizationId, actor: 'operator', action: 'organization.allowed_models_changed', changes: { before: { allowed_models: null }, after: { allowed_models: [chatRequest().model, successor] } } },
      { orgId: organizationId, actor: 'operator', action: 'organization.region_requirement_changed', changes: { before: { requires_region: null }, after: { requires_region: 'EU' } } },
      { orgId: organizationId, actor: 'operator', action: 'organization.rpm_ceiling_changed', changes: { before: { custom_rpm_ceiling: 7 }, after: { custom_rpm_ceiling: null } } },
      { orgId: organizationId, actor: 'operator', action: 'organization.allowed_models_changed', changes: { before: { allowed_models: [chatRequest().model, successor] }, after: { allowed_models: null } } },
    ])
  })

  test.each([
    [{ custom_rpm_ceiling: 0 }, 'custom_rpm_ceiling'],
    [{ custom_rpm_ceiling: '10' }, 'custom_rpm_ceiling'],
    [{ custom_rpm_ceiling: 2.5 }, 'custom_rpm_ceiling'],
    [{ allowed_models: [chatRequest().model, 'nile/unknown'] }, 'allowed_models[1]'],
    [{ plan_tier: 'platinum' }, 'plan_tier'],
    [{ requires_region: '' }, 'requires_region'],
    [{ balance_egp: '5' }, 'balance_egp'],
  ])('refuses the organization settings %p with 400 naming %s', async (body, param) => {
    const { admin } = await operatorGateway()
    const { organizationId } = await tenant()

    const refused = await admin('POST', `/v1/admin/organizations/${organizationId}`, { body })

    expect([refused.status, refused.json.error.code, refused.json.error.param]).toEqual([400, 'invalid_request', param])
  })

  test('suspension: the keys answer 403 org_suspended, members may read but not change, reactivation restores both', async () => {
    const { gateway, admin, chat } = await operatorGateway()
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const { organizationId, apiKey } = await tenant()
    const asOwner = (method: string, body?: unknown) => gateway.send(method, '/v1/organization', { token: owner.token, body, headers: { 'openai-organization': orgId } })

    const suspended = await Promise.all([admin('POST', `/v1/admin/organizations/${organizationId}/suspend`, { body: { reason: 'unpaid invoice' } }), admin('POST', `/v1/admin/organizations/${orgId}/suspend`)])
    const whileSuspended = { chat: await chat(apiKey), read: await asOwner('GET'), write: await asOwner('POST', { name: 'Renamed' }) }
    await Promise.all([organizationId, orgId].map((id) => admin('POST', `/v1/admin/organizations/${id}/reactivate`)))
    const afterwards = { chat: await chat(apiKey), write: await asOwner('POST', { name: 'Renamed' }) }

    expect(suspended.map((response) => [response.status, response.json.status])).toEqual([[200, 'suspended'], [200, 'suspended']])
    expect([whileSuspended.chat.status, whileSuspended.chat.json.error.code, whileSuspended.read.status]).toEqual([403, 'org_suspended', 200])
    expect([whileSuspended.write.status, whileSuspended.write.json.error.code]).toEqual([403, 'org_suspended'])
    expect([afterwards.chat.status, afterwards.write.status]).toEqual([200, 200])
    const trail = await gateway.send('GET', '/v1/organization/audit_logs?actions[]=organization.suspended&actions[]=organization.reactivated', { token: owner.token, headers: { 'openai-organization': orgId } })
    expect(trail.json.data.map((record: { type: string; changes: unknown }) => [record.type, record.changes])).toEqual([
      ['organization.reactivated', { before: { status: 'suspended' }, after: { status: 'active' } }],
      ['organization.suspended', { before: { status: 'active' }, after: { status: 'suspended' } }],
    ])
    expect((await auditRecords(organizationId)).find((record) => record.action === 'organization.suspended')?.changes).toEqual({ before: { status: 'active' }, after: { status: 'suspended', reason: 'unpaid invoice' } })
  })

  test('a top-up needs an Idempotency-Key; the same key again replays it, crediting once; with another body it is 409', async () => {
    const { admin, gateway } = await operatorGateway()
    const { organizationId } = await tenant(0n)
    const topUp = (body: unknown, key?: string) => admin('POST', `/v1/admin/organizations/${organizationId}/credits`, { body, headers: key ? { 'idempotency-key': key } : {} })
    const key = `top-up-${organizationId}`

    const withoutKey = await topUp({ amount_egp: '250' })
    const first = await topUp({ amount_egp: '250', note: 'invoice 17' }, key)
    const replay = await topUp({ amount_egp: '250', note: 'invoice 17' }, key)
    const otherBody = await topUp({ amount_egp: '999' }, key)
    // Another operator's request store does not know the key; the ledger still refuses to credit twice.
    const otherOperator = await gateway.signUp({ operator: true })
    const sameKeyElsewhere = await gateway.send('POST', `/v1/admin/organizations/${organizationId}/credits`, { token: otherOperator.token, body: { amount_egp: '250' }, headers: { 'idempotency-key': key } })
    const conflictingElsewhere = await gateway.send('POST', `/v1/admin/organizations/${organizationId}/credits`, { token: otherOperator.token, body: { amount_egp: '1' }, headers: { 'idempotency-key': key } })

    expect([withoutKey.status, withoutKey.json.error.param]).toEqual([400, 'Idempotency-Key'])
    expect(first.status).toBe(201)
    expect(first.json).toEqual({ object: 'organization.credit', id: expect.any(String), organization_id: organizationId, amount_egp: '250.000000', balance_egp: '250.000000', note: 'invoice 17', created_at: expect.any(Number) })
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.json]).toEqual([201, 'true', first.json])
    expect([otherBody.status, otherBody.json.error.code]).toEqual([409, 'conflict'])
    expect([sameKeyElsewhere.status, sameKeyElsewhere.json.id, sameKeyElsewhere.json.balance_egp]).toEqual([201, first.json.id, '250.000000'])
    expect([conflictingElsewhere.status, conflictingElsewhere.json.error.code]).toEqual([409, 'conflict'])
    const ledger = await context.current.db.drizzle.select().from(creditTransactions).where(and(eq(creditTransactions.orgId, organizationId), eq(creditTransactions.kind, 'top_up')))
    expect(ledger.map((row) => [row.amountMicros, row.idempotencyKey])).toEqual([[250_000_000n, key]])
    expect((await admin('GET', `/v1/admin/organizations/${organizationId}`)).json.balance_egp).toBe('250.000000')
    expect((await auditRecords(first.json.id)).map(({ action, orgId, changes }) => ({ action, orgId, changes }))).toEqual([
      { action: 'credit.added', orgId: organizationId, changes: { before: { balance_micros: '0' }, after: { amount_micros: '250000000', balance_micros: '250000000', note: 'invoice 17' } } },
    ])
  })

  test.each([['0'], ['0.000000'], ['-5'], ['1.1234567'], ['ten'], ['12345678901']])('refuses a top-up of %p with 400 naming amount_egp', async (amount) => {
    const { admin } = await operatorGateway()
    const { organizationId } = await tenant()

    const refused = await admin('POST', `/v1/admin/organizations/${organizationId}/credits`, { body: { amount_egp: amount }, headers: { 'idempotency-key': crypto.randomUUID() } })

    expect([refused.status, refused.json.error.code, refused.json.error.param]).toEqual([400, 'invalid_request', 'amount_egp'])
  })

  test('credits an unknown organization with 404', async () => {
    const { admin } = await operatorGateway()

    const refused = await admin('POST', '/v1/admin/organizations/org_unknown/credits', { body: { amount_egp: '1' }, headers: { 'idempotency-key': crypto.randomUUID() } })

    expect([refused.status, refused.json.error.code]).toEqual([404, 'not_found'])
  })

  test('20 concurrent top-ups with distinct keys add up exactly, in the database and in the live balance', async () => {
    const { admin, chat, gateway } = await operatorGateway()
    const { organizationId, apiKey } = await tenant(1_000_000n)
    await chat(apiKey)
    const month = billingMonth(Date.now())
    const liveBefore = (await gateway.admission.snapshot(organizationId, month))!.balanceMicros

    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => admin('POST', `/v1/admin/organizations/${organizationId}/credits`, { body: { amount_egp: `${i + 1}.5` }, headers: { 'idempotency-key': `parallel-${organizationId}-${i}` } })),
    )

    const addedMicros = 20n * 21n / 2n * 1_000_000n + 20n * 500_000n
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(201))
    const [row] = await context.current.db.drizzle.select({ balance: organizations.balanceMicros }).from(organizations).where(eq(organizations.id, organizationId))
    const [ledger] = await context.current.db.drizzle
      .select({ total: sql<string>`sum(${creditTransactions.amountMicros})::text` })
      .from(creditTransactions)
      .where(and(eq(creditTransactions.orgId, organizationId), eq(creditTransactions.kind, 'top_up')))
    expect([row!.balance, BigInt(ledger!.total)]).toEqual([1_000_000n + addedMicros, addedMicros])
    expect((await gateway.admission.snapshot(organizationId, month))!.balanceMicros).toBe(liveBefore + addedMicros)
    expect(new Set(answers.map((answer) => answer.json.balance_egp)).size).toBe(20)
  })

  test('a top-up lets an organization refused with 402 make requests at once, without a restart', async () => {
    const { admin, chat } = await operatorGateway()
    const { organizationId, apiKey } = await tenant(0n)

    const broke = await chat(apiKey)
    await admin('POST', `/v1/admin/organizations/${organizationId}/credits`, { body: { amount_egp: '100' }, headers: { 'idempotency-key': `rescue-${organizationId}` } })
    const funded = await chat(apiKey)

    expect([broke.status, broke.json.error.code]).toEqual([402, 'quota_exceeded'])
    expect(funded.status).toBe(200)
  })

  test('a retirement dated today or earlier makes the model answer 403 model_sunset naming the replacement; cancelling brings it back', async () => {
    const { admin, chat, changes } = await operatorGateway()
    const { apiKey } = await tenant()
    const path = `/v1/admin/models/${retiringModel}/retire`

    const retired = await admin('POST', path, { body: { retires_on: '2025-01-31', replacement: successor } })
    const refused = await chat(apiKey, chatRequest({ model: retiringModel }))
    const cancelled = await admin('DELETE', `/v1/admin/models/${encodeURIComponent(retiringModel)}/retirement`)
    const back = await chat(apiKey, chatRequest({ model: retiringModel }))
    const cancelledAgain = await admin('DELETE', `/v1/admin/models/${retiringModel}/retirement`)

    expect(retired.json).toMatchObject({ id: retiringModel, status: 'Retired', shutdown_date: '2025-01-31', replacement: successor })
    expect([refused.status, refused.json.error.code]).toEqual([403, 'model_sunset'])
    expect(refused.json.error.message).toContain(`Use '${successor}' instead.`)
    expect(cancelled.json).toEqual({ object: 'model.retirement', id: retiringModel, deleted: true })
    expect(back.status).toBe(200)
    expect([cancelledAgain.status, cancelledAgain.json.error.code]).toEqual([404, 'not_found'])
    expect(changes).toEqual([{ kind: 'model_retirements' }, { kind: 'model_retirements' }])
    expect((await auditRecords(retiringModel)).slice(-2)).toEqual([
      { orgId: null, actor: 'operator', action: 'model.retirement_scheduled', changes: { before: null, after: { retires_on: '2025-01-31', replacement: successor } } },
      { orgId: null, actor: 'operator', action: 'model.retirement_cancelled', changes: { before: { retires_on: '2025-01-31', replacement: successor }, after: null } },
    ])
  })

  test('a retirement dated in the future keeps the model live and shows its shutdown date; other gateways follow the change', async () => {
    const { admin, chat, gateway } = await operatorGateway()
    const { apiKey } = await tenant()
    const elsewhere = new Catalog(await loadCatalogFile(demoCatalogPath))
    const stopFollowing = await followRetirements(elsewhere, context.current.db.governance.operator, gateway.changes)

    const scheduled = await admin('POST', `/v1/admin/models/${retiringModel}/retire`, { body: { retires_on: '2999-12-31' } })
    const served = await chat(apiKey, chatRequest({ model: retiringModel }))
    const shown = await gateway.send('GET', `/v1/models/${retiringModel}`, { token: apiKey })
    await waitFor(() => elsewhere.find(retiringModel)?.retiresOn === '2999-12-31', { what: 'the other gateway applying the retirement' })
    await admin('DELETE', `/v1/admin/models/${retiringModel}/retirement`)
    await waitFor(() => elsewhere.find(retiringModel)?.retiresOn === null, { what: 'the other gateway applying the cancellation' })
    stopFollowing()

    expect(scheduled.json).toMatchObject({ status: 'Live', shutdown_date: '2999-12-31', replacement: null })
    expect(served.status).toBe(200)
    expect(shown.json).toMatchObject({ id: retiringModel, status: 'Live', shutdown_date: '2999-12-31' })
  })

  test.each([
    [retiringModel, { retires_on: '2025-02-30' }, 400, 'retires_on'],
    [retiringModel, { retires_on: 'tomorrow' }, 400, 'retires_on'],
    [retiringModel, { retires_on: '2025-01-01', replacement: embeddingsModel }, 400, 'replacement'],
    [retiringModel, { retires_on: '2025-01-01', replacement: retiringModel }, 400, 'replacement'],
    [retiringModel, { retires_on: '2025-01-01', replacement: retiredModel }, 400, 'replacement'],
    [retiringModel, { retires_on: '2025-01-01', replacement: 'nile/unknown' }, 400, 'replacement'],
    [retiredModel, { retires_on: '2025-01-01' }, 400, 'model_id'],
    ['nile/unknown', { retires_on: '2025-01-01' }, 404, 'model_id'],
  ])('refuses to retire %s with %p', async (model, body, status, param) => {
    const { admin } = await operatorGateway()

    const refused = await admin('POST', `/v1/admin/models/${model}/retire`, { body })

    expect([refused.status, refused.json.error.param]).toEqual([status, param])
  })

  test('disabling a user makes their sessions answer user_disabled; enabling ends those sessions; both audited', async () => {
    const { admin, operator, gateway } = await operatorGateway()
    const user = await gateway.signUp({ email: `Disable-${crypto.randomUUID()}@Example.test` })

    const found = await admin('GET', `/v1/admin/users?email=${encodeURIComponent(user.email.toUpperCase())}`)
    const disabled = await admin('POST', `/v1/admin/users/${user.user.id}/disable`)
    const whileDisabled = await gateway.send('GET', '/v1/auth/me', { token: user.token })
    const enabled = await admin('POST', `/v1/admin/users/${user.user.id}/enable`)
    const oldSession = await gateway.send('GET', '/v1/auth/me', { token: user.token })
    const self = await admin('POST', `/v1/admin/users/${operator.user.id}/disable`)
    const unknown = await admin('POST', '/v1/admin/users/user_unknown/disable')

    expect(found.json.data).toEqual([expect.objectContaining({ object: 'user', id: user.user.id, email: user.email, status: 'active', is_operator: false })])
    expect(disabled.json).toMatchObject({ id: user.user.id, status: 'disabled' })
    expect([whileDisabled.status, whileDisabled.json.error.code]).toEqual([401, 'user_disabled'])
    expect(enabled.json).toMatchObject({ id: user.user.id, status: 'active' })
    expect([oldSession.status, oldSession.json.error.code]).toEqual([401, 'token_revoked'])
    expect([self.status, unknown.status]).toEqual([400, 404])
    expect((await auditRecords(user.user.id)).filter((record) => record.actor === 'operator')).toEqual([
      { orgId: null, actor: 'operator', action: 'user.disabled', changes: { before: { disabled: false }, after: { disabled: true } } },
      { orgId: null, actor: 'operator', action: 'user.enabled', changes: { before: { disabled: true }, after: { disabled: false } } },
    ])
  })

  test('lists users page by page', async () => {
    const { admin, gateway } = await operatorGateway()
    const made: SignedInUser[] = [await gateway.signUp(), await gateway.signUp(), await gateway.signUp()]
    const ids = made.map((user) => user.user.id)

    const seen: string[] = []
    for (let after = ''; ; ) {
      const page = await admin('GET', `/v1/admin/users?limit=3${after}`)
      seen.push(...page.json.data.map((user: { id: string }) => user.id))
      if (!page.json.has_more) break
      after = `&after=${page.json.last_id}`
    }

    expect(seen.filter((id) => ids.includes(id))).toEqual(ids)
    expect(new Set(seen).size).toBe(seen.length)
  })

  test('lists the requests whose upstream reported more than their hold, page by page and by organization, to operators only', async () => {
    const { gateway, admin } = await operatorGateway()
    const [first, second] = [await tenant(), await tenant()]
    const user = await gateway.signUp()
    const row = (orgId: string, requestId: string, unbilled?: { promptTokens: number; completionTokens: number; micros: bigint }) =>
      usageEvent({ orgId, requestId, promptTokens: 16_272, completionTokens: 10, costMicros: 81_510n, createdAt: new Date(), ...(unbilled ? { unbilled } : {}) })
    const ids = [`req_over_a_${first.organizationId}`, `req_over_b_${second.organizationId}`]
    await context.current.db.usage.insertUsageEvents([
      row(first.organizationId, `req_within_${first.organizationId}`),
      row(first.organizationId, ids[0]!, { promptTokens: 3_728, completionTokens: 0, micros: 18_640n }),
      row(second.organizationId, ids[1]!, { promptTokens: 100, completionTokens: 5, micros: 575n }),
    ])

    const seen: Array<{ id: string }> = []
    for (let after = ''; ; ) {
      const page = await admin('GET', `/v1/admin/unbilled_usage?limit=1${after}`)
      expect(page.json.data.length).toBeLessThanOrEqual(1)
      seen.push(...page.json.data)
      if (!page.json.has_more) break
      after = `&after=${page.json.last_id}`
    }
    const ofFirst = await admin('GET', `/v1/admin/unbilled_usage?organization_id=${first.organizationId}`)
    const refused = await gateway.send('GET', '/v1/admin/unbilled_usage', { token: user.token })
    const badCursor = await admin('GET', `/v1/admin/unbilled_usage?after=req_within_${first.organizationId}`)

    expect(seen.filter((usage) => ids.includes(usage.id)).map((usage) => usage.id)).toEqual(ids)
    expect(ofFirst.json.data).toEqual([
      {
        object: 'admin.unbilled_usage',
        id: ids[0],
        organization_id: first.organizationId,
        project_id: 'proj_test',
        api_key_id: 'key_test',
        model: 'nile-chat-small',
        endpoint: 'chat.completions',
        status: 200,
        reported_prompt_tokens: 20_000,
        reported_completion_tokens: 10,
        billed_prompt_tokens: 16_272,
        billed_completion_tokens: 10,
        billed_egp: '0.081510',
        unbilled_prompt_tokens: 3_728,
        unbilled_completion_tokens: 0,
        unbilled_egp: '0.018640',
        created_at: expect.any(Number),
      },
    ])
    expect([refused.status, refused.json.error.code]).toEqual([403, 'permission_denied'])
    expect([badCursor.status, badCursor.json.error.param]).toEqual([400, 'after'])
  })
})
