import { expect, test } from 'bun:test'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'

describeEachDatabase('creating organizations', (context) => {
  test('the creator becomes the owner; an Idempotency-Key replays the first answer and refuses another body', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const first = await gateway.send('POST', '/v1/organizations', { token: owner.token, body: { name: 'Acme' }, headers: { 'idempotency-key': 'create-acme' } })
    expect(first.status).toBe(201)
    expect(first.json).toMatchObject({ object: 'organization', name: 'Acme', role: 'owner', plan_tier: 'developer', status: 'active', balance_egp: '0.000000' })
    const replay = await gateway.send('POST', '/v1/organizations', { token: owner.token, body: { name: 'Acme' }, headers: { 'idempotency-key': 'create-acme' } })
    expect(replay.status).toBe(201)
    expect(replay.headers.get('idempotent-replayed')).toBe('true')
    expect(replay.json.id).toBe(first.json.id)
    const other = await gateway.send('POST', '/v1/organizations', { token: owner.token, body: { name: 'Other' }, headers: { 'idempotency-key': 'create-acme' } })
    expect(other.status).toBe(409)
    expect(other.json.error).toMatchObject({ type: 'conflict', code: 'conflict', param: 'Idempotency-Key' })
  })

  test('an API key on a management route is invalid_token_type; no header is missing_auth_header', async () => {
    const gateway = await managementApp(context.current.db)
    const wrongType = await gateway.send('POST', '/v1/organizations', { token: `sk-${'a'.repeat(48)}`, body: { name: 'x' } })
    expect(wrongType.status).toBe(401)
    expect(wrongType.json.error.code).toBe('invalid_token_type')
    const missing = await gateway.send('POST', '/v1/organizations', { body: { name: 'x' } })
    expect(missing.status).toBe(401)
    expect(missing.json.error.code).toBe('missing_auth_header')
  })
})
