import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Nilegate } from '../../sdk/src'
import { rejectionOf } from '../e2e/sdk-client'
import { openTestDatabase, slowHookTimeoutMs, type TestDatabase } from '../support/databases'
import { managementApp, signInOperator } from '../support/management-app'
import { waitFor } from '../support/wait-for'

describe('accounts, browser sessions and catalogs through the SDK', () => {
  let database: TestDatabase
  let gateway: Awaited<ReturnType<typeof managementApp>>

  beforeAll(async () => {
    database = await openTestDatabase('pglite')
    gateway = await managementApp(database.db)
  }, slowHookTimeoutMs)

  afterAll(() => database?.dispose())

  /** A client without an access token whose fetch keeps the session cookie, as a browser would. */
  function browserClient() {
    let cookie: string | null = null
    return new Nilegate({
      baseURL: 'http://localhost/v1',
      maxRetries: 0,
      fetch: async (input, init) => {
        const request = new Request(input, init)
        if (cookie) request.headers.set('cookie', cookie)
        const response = await gateway.app.handle(request)
        const set = response.headers.get('set-cookie')
        if (set) cookie = /Max-Age=0/.test(set) ? null : set.split(';')[0]!
        return response
      },
    })
  }

  test('a cookie login keeps no access token, sends the CSRF token it got on changes, and logs out', async () => {
    const user = await gateway.signUp()
    const ng = browserClient()

    const session = await ng.auth.login({ email: user.email, password: user.password, session: 'cookie' })
    const organization = await ng.organizations.create({ name: 'From a browser' })
    const me = await ng.auth.me()
    await ng.auth.logout()
    const after = await rejectionOf(ng.auth.me())

    expect(session.token_type).toBe('cookie')
    expect(session.csrf_token).toMatch(/^[\w-]{43}$/)
    expect(ng.accessToken).toBeNull()
    expect(organization.name).toBe('From a browser')
    expect(me.csrf_token).toBe(session.csrf_token)
    expect(ng.csrfToken).toBeNull()
    expect(after).toMatchObject({ status: 401 })
  })

  test('changes a password, and resets one with the mailed token', async () => {
    const user = await gateway.signUp()
    const ng = new Nilegate({ baseURL: 'http://localhost/v1', accessToken: user.token, fetch: (input, init) => gateway.app.handle(new Request(input, init)) })

    const changed = await ng.auth.changePassword({ current_password: user.password, new_password: 'a changed passphrase' })
    const requested = await ng.auth.requestPasswordReset({ email: user.email })
    let token: string | undefined
    await waitFor(() => (token = gateway.mail.findLast((message) => message.to === user.email)?.secrets[0]) !== undefined, { what: 'the reset mail' })
    const reset = await ng.auth.confirmPasswordReset({ token: token!, new_password: 'a reset passphrase' })

    expect(changed).toEqual({ object: 'password_change', user_id: user.user.id, sessions_revoked: 0 })
    expect(requested).toMatchObject({ object: 'password_reset', email: user.email })
    expect(reset).toEqual({ object: 'password_change', user_id: user.user.id, sessions_revoked: 1 })
  })

  test("reads the organization's catalog with a session, and operators the whole one and organizations by name", async () => {
    const { operator } = await signInOperator(gateway)
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner, 'Searchable Sphinx')
    const member = new Nilegate({ baseURL: 'http://localhost/v1', accessToken: owner.token, fetch: (input, init) => gateway.app.handle(new Request(input, init)) })
    const ops = new Nilegate({ baseURL: 'http://localhost/v1', accessToken: operator.token, fetch: (input, init) => gateway.app.handle(new Request(input, init)) })
    const [first] = gateway.catalog.models

    const catalog = await member.organization.models.list()
    const one = await member.organization.models.retrieve(first!.id)
    const whole = await ops.admin.models.list()
    const found = await ops.admin.organizations.page({ q: 'searchable sphinx' })

    expect(catalog.data.map((model) => model.id)).toEqual(gateway.catalog.models.map((model) => model.id))
    expect(one.id).toBe(first!.id)
    expect(whole.data).toHaveLength(gateway.catalog.models.length)
    expect(found.data.map((organization) => organization.id)).toEqual([orgId])
  })
})
