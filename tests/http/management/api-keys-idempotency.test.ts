import { expect, test } from 'bun:test'
import { idempotencyKeys } from '../../../server/adapters/postgres/schema'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'
import { createProject } from '../../support/project-keys'

describeEachDatabase('POST .../api_keys with an Idempotency-Key', (context) => {
  async function ownerWithProject() {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    await gateway.createOrganization(owner)
    const project = await createProject(gateway, owner)
    const keysPath = `/v1/organization/projects/${project.id}/api_keys`
    const create = (body: unknown, idempotencyKey: string) => gateway.send('POST', keysPath, { token: owner.token, body, headers: { 'idempotency-key': idempotencyKey } })
    return { gateway, owner, keysPath, create }
  }

  test('a retry makes no second key: it replays the key as created, without its secret, and says it is a replay', async () => {
    const { gateway, owner, keysPath, create } = await ownerWithProject()
    const body = { name: 'deploy bot', rpm_limit: 60, scopes: ['chat.completions'] }

    const first = await create(body, 'retry-of-one-create')
    const retry = await create({ scopes: ['chat.completions'], rpm_limit: 60, name: 'deploy bot' }, 'retry-of-one-create')
    const listed = await gateway.send('GET', keysPath, { token: owner.token })

    expect(first.status).toBe(201)
    expect(first.json.value).toMatch(/^sk-/)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    expect(retry.status).toBe(201)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(retry.json).toEqual({ ...first.json, value: null })
    expect(listed.json.data.map((key: { id: string }) => key.id)).toEqual([first.json.id])
    const stored = JSON.stringify(await context.current.db.drizzle.select().from(idempotencyKeys))
    expect(stored).not.toContain(first.json.value.slice(3))
  })

  test('the same Idempotency-Key with another body is 409 conflict, and makes no key', async () => {
    const { gateway, owner, keysPath, create } = await ownerWithProject()

    const first = await create({ name: 'one' }, 'reused-key')
    const other = await create({ name: 'two' }, 'reused-key')
    const listed = await gateway.send('GET', keysPath, { token: owner.token })

    expect(first.status).toBe(201)
    expect({ status: other.status, error: other.json.error }).toEqual({
      status: 409,
      error: { type: 'conflict', code: 'conflict', param: 'Idempotency-Key', message: expect.stringContaining('different request') },
    })
    expect(listed.json.data.map((key: { name: string }) => key.name)).toEqual(['one'])
  })

  test('another Idempotency-Key is another key', async () => {
    const { gateway, owner, keysPath, create } = await ownerWithProject()

    const first = await create({ name: 'same' }, 'first-create')
    const second = await create({ name: 'same' }, 'second-create')
    const listed = await gateway.send('GET', keysPath, { token: owner.token })

    expect(second.json.value).not.toBe(first.json.value)
    expect(listed.json.data).toHaveLength(2)
  })
})
