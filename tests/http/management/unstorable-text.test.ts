import { expect, test } from 'bun:test'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'
import { chat, keyInNewOrganization } from '../../support/project-keys'
import { chatRequest } from '../../support/test-app'

/** A request's body fields, from the OpenAPI document's schema of its JSON body. */
function bodyFields(document: any, operation: any): string[] {
  const schema = operation?.requestBody?.content?.['application/json']?.schema
  const resolved = schema?.$ref ? document.components.schemas[schema.$ref.split('/').pop()] : schema
  return Object.keys(resolved?.properties ?? {})
}

describeEachDatabase('text the database cannot hold', (context) => {
  test('U+0000 or an unpaired surrogate in a body field, path or query parameter is 400 invalid_request naming it; nothing is written', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const operator = await gateway.signUp({ operator: true })
    const asOperator = (method: string, path: string) => gateway.send(method, path, { token: operator.token })

    const answers = [
      await gateway.send('POST', '/v1/organizations', { token: owner.token, body: { name: 'Acme\u0000' } }),
      await gateway.send('POST', '/v1/organizations', { token: owner.token, body: { name: 'Acme \ud800' } }),
      await gateway.send('POST', '/v1/auth/login', { body: { email: 'someone\u0000@example.test', password: 'a password long enough' } }),
      await asOperator('GET', '/v1/admin/organizations/%00'),
      await asOperator('GET', '/v1/admin/organizations?after=%00'),
      await asOperator('DELETE', '/v1/admin/models/nile%00model/retirement'),
    ]
    const unauthenticated = await gateway.send('GET', '/v1/admin/organizations/%00')

    expect(answers.map((answer) => [answer.status, answer.json.error.code, answer.json.error.param])).toEqual([
      [400, 'invalid_request', 'name'],
      [400, 'invalid_request', 'name'],
      [400, 'invalid_request', 'email'],
      [400, 'invalid_request', 'id'],
      [400, 'invalid_request', 'after'],
      [400, 'invalid_request', 'model_id'],
    ])
    expect(answers[0]!.json.error.message).toContain('U+0000 or an unpaired UTF-16 surrogate')
    expect([unauthenticated.status, unauthenticated.json.error.code]).toEqual([401, 'missing_auth_header'])
    expect((await gateway.send('GET', '/v1/organizations', { token: owner.token })).json.data).toEqual([])
  })

  test('inference and the playground store none of what they are sent, and take such text in chat content', async () => {
    const gateway = await managementApp(context.current.db)
    const { owner, project, secret } = await keyInNewOrganization(gateway)
    const messages = [{ role: 'user' as const, content: 'a\u0000b and a lone \ud800' }]

    const viaKey = await chat(gateway, secret, { messages })
    const viaPlayground = await gateway.send('POST', '/v1/playground/chat/completions', { token: owner.token, body: chatRequest({ messages }), headers: { 'openai-project': project.id } })

    expect([viaKey.status, viaPlayground.status]).toEqual([200, 200])
  })

  test('no route of the OpenAPI document answers 5xx to such text in any path parameter, list cursor or body field, nor a status it does not list', async () => {
    const gateway = await managementApp(context.current.db)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const scope = { 'openai-organization': orgId }
    const project = await gateway.send('POST', '/v1/organization/projects', { token: owner.token, body: { name: 'p' }, headers: scope })
    const document = (await gateway.send('GET', '/openapi.json')).json
    const known: Record<string, string> = { org_id: orgId, id: orgId, project_id: project.json.id }
    const filled = (path: string) => path.replace(/\{([^}]+)\}/g, (_, name: string) => known[name] ?? 'x_1')

    const failures: string[] = []
    let sent = 0
    for (const [path, operations] of Object.entries<Record<string, unknown>>(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const requests: { url: string; body?: unknown }[] = [...path.matchAll(/\{[^}]+\}/g)].map(([parameter]) => ({ url: filled(path.replace(parameter, '%00')) }))
        requests.push({ url: `${filled(path)}?after=%00` })
        for (const field of bodyFields(document, operation)) requests.push({ url: filled(path), body: { [field]: '\u0000' } }, { url: filled(path), body: { [field]: 'x\ud800' } })
        for (const { url, body } of requests) {
          // A fresh session each time: some routes log out or change the password, ending the one before.
          const token = path.startsWith('/v1/admin') ? (await gateway.signUp({ operator: true })).token : (await gateway.addMember(orgId, 'owner')).token
          const answer = await gateway.send(method.toUpperCase(), url, { token, headers: scope, body: method === 'get' ? undefined : (body ?? {}) })
          sent++
          if (answer.status >= 500 || (answer.status >= 400 && typeof answer.json?.error?.message !== 'string')) failures.push(`${method} ${url} ${JSON.stringify(body)}: ${answer.status} ${answer.text.slice(0, 200)}`)
          // The document promises every status a route answers with.
          if (answer.status >= 400 && !(operation as { responses: Record<string, unknown> }).responses[String(answer.status)]) failures.push(`${method} ${path} answered ${answer.status}, which its OpenAPI operation does not list`)
        }
      }
    }

    expect(sent).toBeGreaterThan(100)
    expect(failures).toEqual([])
  })
})
