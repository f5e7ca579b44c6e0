import { afterAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { auditLogs, deployments } from '../../../server/adapters/postgres/schema'
import { Catalog } from '../../../server/core/catalog'
import { followDeployments } from '../../../server/core/governance/deployments'
import { loadCatalogFile } from '../../../server/catalog-file'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, signInOperator } from '../../support/management-app'
import { chatModel, chatRequest, demoCatalogPath, retiredModel } from '../../support/test-app'
import { waitFor } from '../../support/wait-for'

const keyEnv = 'NILEGATE_TEST_UPSTREAM_KEY'
const secret = 'sk-upstream-do-not-show'
process.env[keyEnv] = secret
afterAll(() => {
  delete process.env[keyEnv]
})

/** A deployment of the demo chat model on a vLLM server, as an operator would add it. */
const vllm = { model_id: chatModel, provider: 'openai-compatible', base_url: 'http://10.0.0.5:8000/v1/', api_key_env: keyEnv }

describeEachDatabase('the deployments API, /v1/admin/deployments', (context) => {
  async function operatorGateway() {
    const gateway = await managementApp(context.current.db)
    const { changes, admin } = await signInOperator(gateway)
    return { gateway, changes, admin }
  }

  async function auditRecords(targetId: string) {
    const rows = await context.current.db.drizzle.select().from(auditLogs).where(eq(auditLogs.targetId, targetId)).orderBy(auditLogs.seq)
    return rows.map((row) => ({ action: row.action, changes: row.changes }))
  }

  test('answers 403 permission_denied to users who are not operators, and 401 without a session', async () => {
    const { gateway } = await operatorGateway()
    const user = await gateway.signUp()

    const refused = [
      await gateway.send('GET', '/v1/admin/deployments', { token: user.token }),
      await gateway.send('POST', '/v1/admin/deployments', { token: user.token, body: vllm }),
      await gateway.send('DELETE', '/v1/admin/deployments/dep_x', { token: user.token }),
      await gateway.send('POST', '/v1/admin/catalog/reload', { token: user.token }),
    ]
    const anonymous = await gateway.send('GET', '/v1/admin/deployments')

    expect(refused.map((response) => [response.status, response.json.error.code])).toEqual(Array(4).fill([403, 'permission_denied']))
    expect([anonymous.status, anonymous.json.error.code]).toEqual([401, 'missing_auth_header'])
  })

  test('adds a deployment with the defaults filled in: audited, announced, listed beside the file, followed by other gateways; never shows the key', async () => {
    const { admin, gateway, changes } = await operatorGateway()
    const elsewhere = new Catalog(await loadCatalogFile(demoCatalogPath))
    const stopFollowing = await followDeployments(elsewhere, context.current.db.governance.deployments, gateway.changes)

    const added = await admin('POST', '/v1/admin/deployments', { body: { ...vllm, weight: 3, max_concurrent: 16, timeouts_ms: { connect: 2_000 } } })
    const listed = await admin('GET', `/v1/admin/deployments?model_id=${encodeURIComponent(chatModel)}`)
    await waitFor(() => elsewhere.storedDeployment(added.json.id) !== undefined, { what: 'the other gateway adding the deployment' })
    const removed = await admin('DELETE', `/v1/admin/deployments/${added.json.id}`)
    const removedAgain = await admin('DELETE', `/v1/admin/deployments/${added.json.id}`)
    await waitFor(() => elsewhere.storedDeployment(added.json.id) === undefined, { what: 'the other gateway removing the deployment' })
    stopFollowing()

    expect([added.status, added.json]).toEqual([
      201,
      {
        object: 'deployment',
        id: expect.stringMatching(/^dep_/),
        model_id: chatModel,
        source: 'database',
        provider: 'openai-compatible',
        base_url: 'http://10.0.0.5:8000/v1',
        upstream_model: chatModel,
        region: 'EU',
        weight: 3,
        max_concurrent: 16,
        timeouts_ms: { connect: 2_000, first_token: 60_000, idle: 60_000, total: 600_000 },
        api_key_env: keyEnv,
        developer_role: 'developer',
        circuit: { failures: 5, cooldown_ms: 30_000, state: 'closed' },
        in_flight: 0,
        created_at: expect.any(Number),
      },
    ])
    expect(listed.json.data.map((deployment: { id: string; source: string }) => [deployment.id, deployment.source])).toEqual([
      [`${chatModel}#0`, 'file'],
      [added.json.id, 'database'],
    ])
    expect([removed.status, removed.json, removedAgain.status]).toEqual([200, { object: 'deployment.deleted', id: added.json.id, deleted: true }, 404])
    expect(gateway.catalog.find(chatModel)!.deployments.map(({ id }) => id)).toEqual([`${chatModel}#0`])
    expect(changes).toEqual([{ kind: 'deployments' }, { kind: 'deployments' }])
    expect((await auditRecords(added.json.id)).map((record) => record.action)).toEqual(['deployment.created', 'deployment.deleted'])
    expect((await auditRecords(added.json.id))[0]!.changes).toMatchObject({ before: null, after: { base_url: 'http://10.0.0.5:8000/v1', api_key_env: keyEnv } })
    expect(JSON.stringify([added.json, listed.json, await auditRecords(added.json.id)])).not.toContain(secret)
  })

  test('a deployment in the region an organization requires serves it at once, where it had none before', async () => {
    const { admin, gateway } = await operatorGateway()
    const { organizationId, apiKey } = await context.current.db.createDemoTenant({ balanceMicros: 100_000_000n })
    await admin('POST', `/v1/admin/organizations/${organizationId}`, { body: { requires_region: 'ZZ' } })
    const chat = () => gateway.send('POST', '/v1/chat/completions', { token: apiKey, body: chatRequest() })

    const before = await chat()
    const added = await admin('POST', '/v1/admin/deployments', { body: { model_id: chatModel, provider: 'simulator', region: 'ZZ' } })
    const after = await chat()
    await admin('DELETE', `/v1/admin/deployments/${added.json.id}`)

    expect([before.status, before.json.error.code]).toEqual([503, 'no_healthy_backends'])
    expect(after.status).toBe(200)
    expect(gateway.provider.calls.map(({ call }) => call.deployment.id)).toEqual([added.json.id])
  })

  test("stores developer_role and routes with it: the deployment added, the catalog that follows the database, the audit", async () => {
    const { admin, gateway } = await operatorGateway()

    const added = await admin('POST', '/v1/admin/deployments', { body: { ...vllm, developer_role: 'system' } })
    const followed = new Catalog(await loadCatalogFile(demoCatalogPath))
    followed.applyDeployments(await context.current.db.governance.deployments.listDeployments())
    const routed = gateway.catalog.find(chatModel)!.deployments.find(({ id }) => id === added.json.id)
    await admin('DELETE', `/v1/admin/deployments/${added.json.id}`)

    expect([added.status, added.json.developer_role]).toEqual([201, 'system'])
    expect(followed.storedDeployment(added.json.id)!.developerRole).toBe('system')
    expect(routed!.developerRole).toBe('system')
    expect((await auditRecords(added.json.id))[0]!.changes).toMatchObject({ after: { developer_role: 'system' } })
  })

  test('the same Idempotency-Key adds the deployment once', async () => {
    const { admin } = await operatorGateway()
    const headers = { 'idempotency-key': crypto.randomUUID() }

    const first = await admin('POST', '/v1/admin/deployments', { body: vllm, headers })
    const replay = await admin('POST', '/v1/admin/deployments', { body: vllm, headers })
    const rows = await context.current.db.drizzle.select().from(deployments).where(eq(deployments.id, first.json.id))
    await admin('DELETE', `/v1/admin/deployments/${first.json.id}`)

    expect([first.status, replay.status, replay.headers.get('idempotent-replayed'), replay.json.id]).toEqual([201, 201, 'true', first.json.id])
    expect(rows).toHaveLength(1)
  })

  test('refuses with 400 naming the field: an unknown or retired model, a base_url that is not http(s), carries credentials or is missing, and more', async () => {
    const { admin } = await operatorGateway()
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ ...vllm, model_id: 'nile/unknown' }, 'model_id'],
      [{ ...vllm, model_id: retiredModel }, 'model_id'],
      [{ ...vllm, base_url: 'ftp://10.0.0.5/v1' }, 'base_url'],
      [{ ...vllm, base_url: 'not a url' }, 'base_url'],
      [{ ...vllm, base_url: 'https://user:hunter2@10.0.0.5/v1' }, 'base_url'],
      [{ model_id: chatModel, provider: 'openai-compatible' }, 'base_url'],
      [{ model_id: chatModel, provider: 'simulator', base_url: 'http://10.0.0.5/v1' }, 'base_url'],
      [{ ...vllm, api_key_env: 'sk-pasted-the-key-itself' }, 'api_key_env'],
      [{ ...vllm, weight: 0 }, 'weight'],
      [{ ...vllm, developer_role: 'user' }, 'developer_role'],
      [{ ...vllm, api_key: 'sk-inline' }, 'api_key'],
    ]

    const answers = await Promise.all(refusals.map(([body]) => admin('POST', '/v1/admin/deployments', { body })))
    const fileDeployment = await admin('DELETE', `/v1/admin/deployments/${encodeURIComponent(`${chatModel}#0`)}`)
    const unknownModel = await admin('GET', '/v1/admin/deployments?model_id=nile%2Funknown')

    expect(answers.map((answer) => [answer.status, answer.json.error.param])).toEqual(refusals.map(([, param]) => [400, param]))
    expect(answers.map((answer) => answer.text).join()).not.toContain('hunter2')
    expect([fileDeployment.status, fileDeployment.json.error.message]).toEqual([400, expect.stringContaining('declared by the catalog file')])
    expect([unknownModel.status, unknownModel.json.error.param]).toEqual([400, 'model_id'])
  })

  test('POST /v1/admin/catalog/reload asks every gateway to re-read its catalog file', async () => {
    const { admin, changes } = await operatorGateway()

    const reload = await admin('POST', '/v1/admin/catalog/reload')

    expect([reload.status, reload.json]).toEqual([202, { object: 'catalog.reload', requested: true }])
    expect(changes).toEqual([{ kind: 'catalog_file' }])
  })
})
