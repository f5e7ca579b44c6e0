import { expect, test } from 'bun:test'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'
import { createProject, grantCredit } from '../../support/project-keys'
import { chatRequest } from '../../support/test-app'
import { Catalog } from '../../../server/core/catalog'
import { loadCatalogFile } from '../../../server/catalog-file'
import { createLogger } from '../../../server/observability/logger'
import { RequestObserver } from '../../../server/observability/request-record'
import { CapturedOutput } from '../observability/observed-app'
import { demoCatalogPath } from '../../support/test-app'

describeEachDatabase('the playground', (context) => {
  async function setUp(options: Parameters<typeof managementApp>[1] = {}) {
    const gateway = await managementApp(context.current.db, options)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    await grantCredit(gateway.db, orgId)
    const project = await createProject(gateway, owner, { monthly_spend_cap_egp: '100' })
    const play = (token: string, body: unknown = chatRequest(), projectId: string | null = project.id) =>
      gateway.send('POST', '/v1/playground/chat/completions', { token, body, headers: projectId ? { 'openai-project': projectId } : {} })
    return { gateway, owner, orgId, project, play }
  }

  test('a member tries a model with a session, billed and recorded under the project, plain and streamed', async () => {
    const { gateway, orgId, project, play } = await setUp()
    const member = await gateway.addMember(orgId, 'member')
    const plain = await play(member.token)
    expect(plain.status).toBe(200)
    expect(plain.json.object).toBe('chat.completion')
    expect(plain.headers.get('x-ratelimit-limit-requests')).not.toBeNull()
    const streamed = await play(member.token, chatRequest({ stream: true }))
    expect(streamed.status).toBe(200)
    expect(streamed.text).toContain('data: [DONE]')
    expect(gateway.usage.map((event) => [event.orgId, event.projectId, event.keyId])).toEqual([
      [orgId, project.id, `playground:${member.user.id}`],
      [orgId, project.id, `playground:${member.user.id}`],
    ])
  })

  test('gives each request its log line, with the organization, project, playground key, tokens and cost, streamed or not', async () => {
    const output = new CapturedOutput()
    const requests = new RequestObserver({ catalog: new Catalog(await loadCatalogFile(demoCatalogPath)), metrics: null, logger: createLogger('info', output), output })
    const { gateway, orgId, project, play } = await setUp({ observability: { requests } })
    const member = await gateway.addMember(orgId, 'member')

    await play(member.token)
    const streamed = await play(member.token, chatRequest({ stream: true }))
    expect(streamed.text).toContain('data: [DONE]')

    const expected = { route: '/v1/playground/chat/completions', status: 200, org_id: orgId, project_id: project.id, key_id: `playground:${member.user.id}`, prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), cost_micros: expect.any(Number) }
    expect(output.requests.filter((line) => line.route === expected.route)).toEqual([expect.objectContaining({ ...expected, stream: false }), expect.objectContaining({ ...expected, stream: true, ttft_ms: expect.any(Number) })])
  })

  test('refuses a reader, an API key, an unverified user, a missing or foreign project, and a model the project does not enable', async () => {
    const { gateway, owner, orgId, project, play } = await setUp()
    const reader = await gateway.addMember(orgId, 'reader')
    const unverified = await gateway.signUp({ verified: false })
    const other = await setUp()
    const narrow = await createProject(gateway, owner, { enabled_models: ['nile/bge-m3'] })
    const outcomes = {
      reader: await play(reader.token),
      apiKey: await play(`sk-${'a'.repeat(48)}`),
      unverified: await play(unverified.token),
      noProject: await play(owner.token, chatRequest(), null),
      foreignProject: await play(owner.token, chatRequest(), other.project.id),
      notEnabled: await play(owner.token, chatRequest(), narrow.id),
      badBody: await play(owner.token, { model: 'nile/qwen2.5-7b-instruct', messages: [{ role: 'wizard', content: 'x' }] }),
    }
    expect(Object.fromEntries(Object.entries(outcomes).map(([name, response]) => [name, [response.status, response.json.error.code]]))).toEqual({
      reader: [403, 'permission_denied'],
      apiKey: [401, 'invalid_token_type'],
      unverified: [403, 'email_not_verified'],
      noProject: [400, 'invalid_request'],
      foreignProject: [403, 'project_not_in_org'],
      notEnabled: [403, 'model_not_enabled_for_project'],
      badBody: [400, 'invalid_role'],
    })
    expect(project.id).not.toBe(narrow.id)
    expect(gateway.usage).toEqual([])
  })
})
