import { expect, test } from 'bun:test'
import { memberships } from '../../../server/adapters/postgres/schema'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'
import { auditRecords, createKey, createProject } from '../../support/project-keys'
import { chatModel, embeddingsModel } from '../../support/test-app'

describeEachDatabase('projects', (context) => {
  test('creates, reads and modifies a project with its limits', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    await gateway.createOrganization(owner)

    const created = await gateway.send('POST', '/v1/organization/projects', { token: owner.token, body: { name: ' Search ', monthly_spend_cap_egp: '250.5', rpm_override: 60, enabled_models: [chatModel, chatModel] } })
    const read = await gateway.send('GET', `/v1/organization/projects/${created.json.id}`, { token: owner.token })
    const modified = await gateway.send('POST', `/v1/organization/projects/${created.json.id}`, { token: owner.token, body: { name: 'Search v2', monthly_spend_cap_egp: null, enabled_models: [embeddingsModel] } })

    expect(created.status).toBe(201)
    expect(created.json).toEqual({
      object: 'organization.project',
      id: expect.stringMatching(/^proj_/),
      name: 'Search',
      created_at: expect.any(Number),
      archived_at: null,
      status: 'active',
      monthly_spend_cap_egp: '250.500000',
      rpm_override: 60,
      enabled_models: [chatModel],
    })
    expect(read.json).toEqual(created.json)
    expect(modified.status).toBe(200)
    expect(modified.json).toEqual({ ...created.json, name: 'Search v2', monthly_spend_cap_egp: null, enabled_models: [embeddingsModel] })
    const [audit] = await auditRecords(context.current.db, 'project.updated', created.json.id)
    expect(audit!.changes).toEqual({
      before: { name: 'Search', monthly_spend_cap_egp: '250.500000', enabled_models: [chatModel] },
      after: { name: 'Search v2', monthly_spend_cap_egp: null, enabled_models: [embeddingsModel] },
    })
  })

  test('refuses a duplicate name with 409, unknown models and bad limits with 400', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    await gateway.createOrganization(owner)
    await createProject(gateway, owner, { name: 'Taken' })
    const send = (body: unknown) => gateway.send('POST', '/v1/organization/projects', { token: owner.token, body })

    const duplicate = await send({ name: 'Taken' })
    const unknownModel = await send({ name: 'A', enabled_models: [chatModel, 'nope/model'] })
    const badCap = await send({ name: 'B', monthly_spend_cap_egp: '-1' })
    const badRpm = await send({ name: 'C', rpm_override: 0 })
    const stringRpm = await send({ name: 'D', rpm_override: '60' })
    const unknownField = await send({ name: 'E', colour: 'blue' })

    expect(duplicate.status).toBe(409)
    expect(duplicate.json.error).toMatchObject({ code: 'conflict', param: 'name' })
    expect(unknownModel.status).toBe(400)
    expect(unknownModel.json.error).toMatchObject({ code: 'invalid_request', param: 'enabled_models' })
    expect(unknownModel.json.error.message).toContain('nope/model')
    expect([badCap, badRpm, stringRpm, unknownField].map((response) => [response.status, response.json.error.code])).toEqual(Array(4).fill([400, 'invalid_request']))
    expect([badCap.json.error.param, badRpm.json.error.param, stringRpm.json.error.param]).toEqual(['monthly_spend_cap_egp', 'rpm_override', 'rpm_override'])
  })

  test('lists projects page by page, archived ones only when asked', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    await gateway.createOrganization(owner)
    const ids: string[] = []
    for (const name of ['one', 'two', 'three']) ids.push((await createProject(gateway, owner, { name })).id)
    await gateway.send('POST', `/v1/organization/projects/${ids[1]}/archive`, { token: owner.token })

    const first = await gateway.send('GET', '/v1/organization/projects?limit=1&include_archived=true', { token: owner.token })
    const rest = await gateway.send('GET', `/v1/organization/projects?include_archived=true&after=${first.json.last_id}`, { token: owner.token })
    const active = await gateway.send('GET', '/v1/organization/projects', { token: owner.token })
    const badCursor = await gateway.send('GET', '/v1/organization/projects?after=proj_unknown', { token: owner.token })
    const badLimit = await gateway.send('GET', '/v1/organization/projects?limit=101', { token: owner.token })

    expect(first.json).toMatchObject({ object: 'list', first_id: ids[0], last_id: ids[0], has_more: true })
    expect(rest.json.data.map((project: { id: string; status: string }) => [project.id, project.status])).toEqual([
      [ids[1], 'archived'],
      [ids[2], 'active'],
    ])
    expect(rest.json.has_more).toBe(false)
    expect(active.json.data.map((project: { id: string }) => project.id)).toEqual([ids[0], ids[2]])
    expect([badCursor.status, badCursor.json.error.param, badLimit.status, badLimit.json.error.param]).toEqual([400, 'after', 400, 'limit'])
  })

  test('an archived project refuses changes and new keys, and stays archived', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    await gateway.createOrganization(owner)
    const project = await createProject(gateway, owner)

    const archived = await gateway.send('POST', `/v1/organization/projects/${project.id}/archive`, { token: owner.token })
    const again = await gateway.send('POST', `/v1/organization/projects/${project.id}/archive`, { token: owner.token })
    const modify = await gateway.send('POST', `/v1/organization/projects/${project.id}`, { token: owner.token, body: { rpm_override: 5 } })
    const newKey = await gateway.send('POST', `/v1/organization/projects/${project.id}/api_keys`, { token: owner.token, body: { name: 'late' } })

    expect([archived.json.status, typeof archived.json.archived_at]).toEqual(['archived', 'number'])
    expect(again.json).toEqual(archived.json)
    expect([modify.status, newKey.status]).toEqual([409, 409])
    expect(modify.json.error.message).toContain('archived')
    expect(newKey.json.error.message).toContain('archived')
    expect(await auditRecords(context.current.db, 'project.archived', project.id)).toHaveLength(1)
  })

  test("another organization's project is 404, and naming it in OpenAI-Project is 403 project_not_in_org", async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    await gateway.createOrganization(owner)
    const stranger = await gateway.signUp()
    await gateway.createOrganization(stranger)
    const theirs = await createProject(gateway, stranger)

    const responses = await Promise.all([
      gateway.send('GET', `/v1/organization/projects/${theirs.id}`, { token: owner.token }),
      gateway.send('POST', `/v1/organization/projects/${theirs.id}`, { token: owner.token, body: { name: 'mine now' } }),
      gateway.send('POST', `/v1/organization/projects/${theirs.id}/archive`, { token: owner.token }),
      gateway.send('GET', `/v1/organization/projects/${theirs.id}/api_keys`, { token: owner.token }),
      gateway.send('POST', `/v1/organization/projects/${theirs.id}/api_keys`, { token: owner.token, body: { name: 'k' } }),
    ])
    const wrongProject = await gateway.send('GET', '/v1/organization/projects', { token: owner.token, headers: { 'openai-project': theirs.id } })

    expect(responses.map((response) => [response.status, response.json.error.code])).toEqual(Array(5).fill([404, 'not_found']))
    expect(wrongProject.status).toBe(403)
    expect(wrongProject.json.error.code).toBe('project_not_in_org')
  })

  test('readers may list projects but not change them; members may not manage projects but may create keys', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const project = await createProject(gateway, owner)
    const reader = await gateway.signUp()
    const member = await gateway.signUp()
    await context.current.db.drizzle.insert(memberships).values([
      { orgId, userId: reader.user.id, role: 'reader' },
      { orgId, userId: member.user.id, role: 'member' },
    ])

    const readerList = await gateway.send('GET', '/v1/organization/projects', { token: reader.token })
    const readerCreate = await gateway.send('POST', '/v1/organization/projects', { token: reader.token, body: { name: 'no' } })
    const memberModify = await gateway.send('POST', `/v1/organization/projects/${project.id}`, { token: member.token, body: { name: 'no' } })
    const memberKey = await createKey(gateway, member, project.id)

    expect(readerList.json.data.map((item: { id: string }) => item.id)).toEqual([project.id])
    expect([readerCreate.status, readerCreate.json.error.code]).toEqual([403, 'permission_denied'])
    expect([memberModify.status, memberModify.json.error.code]).toEqual([403, 'permission_denied'])
    expect(memberKey.owner).toEqual({ type: 'user', user: { id: member.user.id, email: member.email } })
  })
})
