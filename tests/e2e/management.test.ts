import { describe, expect, test } from 'bun:test'
import { useGateway, type GatewayDatabase } from '../support/gateway-process'
import { chatModel } from '../support/test-app'
import { waitFor } from '../support/wait-for'
import type { APIError } from 'openai'
import { recordingClient, rejectionOf } from './sdk-client'

// The management API of a running gateway, embedded (its repositories behind the database thread)
// and on Postgres: a user signs up with the mailed token, joins an organization by invitation,
// makes an API key that the official openai SDK then uses, and loses it on revoke.
describe.each(['pglite', 'postgres'] satisfies GatewayDatabase[])('the management API of a gateway on %s', (database) => {
  const running = useGateway({ database })

  async function call(method: string, path: string, token: string | null, body?: unknown) {
    const response = await fetch(`${running.current.baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: response.status, json: (await response.json()) as any }
  }

  /** The token of the last mail the gateway printed for `email`. */
  async function mailedToken(email: string, prefix: string): Promise<string> {
    const escaped = email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    await running.current.waitForOutput(new RegExp(`mail to ${escaped}[\\s\\S]*?${prefix}[A-Za-z0-9]{48}`))
    const mails = running.current.output().split(`mail to ${email}`)
    return new RegExp(`${prefix}[A-Za-z0-9]{48}`).exec(mails.at(-1)!)![0]
  }

  test('sign up, verify, be invited, make a key, use it with the openai SDK, revoke it, read the audit trail', async () => {
    const owner = await running.current.createDemoTenant()
    const ownerToken = (await call('POST', '/auth/login', null, { email: owner.email, password: owner.password })).json.access_token as string
    expect(ownerToken).toStartWith('ngs_')

    const email = `colleague-${Date.now()}@example.test`
    expect((await call('POST', '/auth/signup', null, { email, password: 'a long enough passphrase' })).status).toBe(201)
    expect((await call('POST', '/auth/verify_email', null, { token: await mailedToken(email, 'ngv_') })).json.email_verified).toBe(true)
    const colleague = (await call('POST', '/auth/login', null, { email, password: 'a long enough passphrase' })).json.access_token as string

    expect((await call('POST', '/organization/invites', ownerToken, { email, role: 'member' })).status).toBe(201)
    const joined = await call('POST', '/invites/accept', colleague, { token: await mailedToken(email, 'ngi_') })
    expect(joined.json).toMatchObject({ id: owner.organization_id, role: 'member' })

    const key = await call('POST', `/organization/projects/${owner.project_id}/api_keys`, colleague, { name: 'sdk', scopes: ['chat.completions', 'models.read'] })
    expect(key.status).toBe(201)
    const { client } = recordingClient(running.current.baseUrl, key.json.value)
    const reply = await client.chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'Hello' }] })
    expect(reply.choices[0]?.message.content?.length).toBeGreaterThan(0)
    expect(((await rejectionOf(client.embeddings.create({ model: 'nile/bge-m3', input: 'x' }))) as APIError).status).toBe(403)

    expect((await call('DELETE', `/organization/projects/${owner.project_id}/api_keys/${key.json.id}`, colleague)).status).toBe(200)
    const revoked = (await rejectionOf(client.chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'Hello' }] }))) as APIError
    expect([revoked.status, (revoked.error as { code?: string }).code]).toEqual([401, 'key_revoked'])

    // Denied key uses are audited off the request path: wait for them to land.
    let actions: string[] = []
    await waitFor(
      async () => {
        const trail = await call('GET', '/organization/audit_logs?limit=100', ownerToken)
        actions = (trail.json.data as { type: string }[]).map((record) => record.type)
        return actions.includes('api_key.use_denied')
      },
      { what: 'an api_key.use_denied record' },
    )
    for (const action of ['invite.created', 'invite.accepted', 'api_key.created', 'api_key.revoked', 'api_key.use_denied']) expect(actions).toContain(action)
    expect((await call('GET', '/organization/audit_logs', colleague)).json.error.code).toBe('permission_denied')
  }, 60_000)
})
