import { expect, test } from 'bun:test'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, signInOperator } from '../../support/management-app'
import { chatModel, embeddingsModel } from '../../support/test-app'

const retiredModel = 'nile/llama-2-13b-chat'
const ids = (response: { json: { data: Array<{ id: string }> } }) => response.json.data.map((model) => model.id)

describeEachDatabase('the catalog for signed-in members and operators', (context) => {
  test("a member of any role reads the organization's catalog, retired models included, narrowed by the allow-list and the project's enabled models", async () => {
    const gateway = await managementApp(context.current.db)
    const { admin } = await signInOperator(gateway)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const reader = await gateway.addMember(orgId, 'reader')
    const project = await gateway.send('POST', '/v1/organization/projects', { token: owner.token, body: { name: 'Embeddings only', enabled_models: [embeddingsModel] } })
    const everyModel = gateway.catalog.models.map((model) => model.id)

    const open = await gateway.send('GET', '/v1/organization/models', { token: reader.token })
    const forProject = await gateway.send('GET', '/v1/organization/models', { token: reader.token, headers: { 'openai-project': project.json.id } })
    await admin('POST', `/v1/admin/organizations/${orgId}`, { body: { allowed_models: [chatModel, retiredModel] } })
    const allowed = await gateway.send('GET', '/v1/organization/models', { token: reader.token })
    const one = await gateway.send('GET', `/v1/organization/models/${encodeURIComponent(chatModel)}`, { token: reader.token })
    const raw = await gateway.send('GET', `/v1/organization/models/${chatModel}`, { token: reader.token })
    const notAllowed = await gateway.send('GET', `/v1/organization/models/${encodeURIComponent(embeddingsModel)}`, { token: reader.token })
    const unknown = await gateway.send('GET', '/v1/organization/models/nile%2Fnothing', { token: reader.token })

    expect(open.status).toBe(200)
    expect(open.json.object).toBe('list')
    expect(ids(open)).toEqual(everyModel)
    expect(open.json.data.find((model: { id: string }) => model.id === retiredModel)).toMatchObject({ status: 'Retired' })
    expect(ids(forProject)).toEqual([embeddingsModel])
    expect(ids(allowed)).toEqual(everyModel.filter((id) => id === chatModel || id === retiredModel))
    expect(one.json).toMatchObject({ object: 'model', id: chatModel, status: 'Live', input_price_egp_per_1m: expect.any(String) })
    expect(raw.json).toEqual(one.json)
    for (const absent of [notAllowed, unknown]) {
      expect(absent.status).toBe(404)
      expect(absent.json.error).toMatchObject({ code: 'not_found', param: 'model' })
    }
  })

  test('takes a session, cookie or bearer, not an API key; a user without an organization is refused', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    await gateway.createOrganization(owner)
    const loner = await gateway.signUp()
    const login = await gateway.send('POST', '/v1/auth/login', { body: { email: owner.email, password: owner.password, session: 'cookie' } })
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!

    const viaCookie = await gateway.send('GET', '/v1/organization/models', { headers: { cookie } })
    const withKey = await gateway.send('GET', '/v1/organization/models', { token: `sk-${'a'.repeat(40)}` })
    const withoutOrganization = await gateway.send('GET', '/v1/organization/models', { token: loner.token })

    expect(viaCookie.status).toBe(200)
    expect(withKey.json.error.code).toBe('invalid_token_type')
    expect(withoutOrganization.json.error.code).toBe('not_a_member')
  })

  test('operators list the whole catalog; nobody else may', async () => {
    const gateway = await managementApp(context.current.db)
    const { admin } = await signInOperator(gateway)
    const customer = await gateway.signUp()

    const listed = await admin('GET', '/v1/admin/models')
    const refused = await gateway.send('GET', '/v1/admin/models', { token: customer.token })

    expect(listed.status).toBe(200)
    expect(ids(listed)).toEqual(gateway.catalog.models.map((model) => model.id))
    expect(ids(listed)).toContain(retiredModel)
    expect(refused.status).toBe(403)
    expect(refused.json.error.code).toBe('permission_denied')
  })
})
