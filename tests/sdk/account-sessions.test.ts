import { expect, test } from 'bun:test'
import { Nilegate } from '../../sdk/src'
import { rejectionOf } from '../e2e/sdk-client'
import { describeEachDatabase } from '../support/databases'
import { managementApp, signInOperator } from '../support/management-app'

describeEachDatabase("the signed-in user's account through the SDK", (context) => {
  async function gatewayWithClients() {
    const gateway = await managementApp(context.current.db)
    /** A client of the in-process app acting with `accessToken`. */
    const client = (accessToken: string) => new Nilegate({ baseURL: 'http://localhost/v1', accessToken, maxRetries: 0, fetch: (input, init) => gateway.app.handle(new Request(input, init)) })
    return { gateway, client }
  }

  test('auth.me() says whether the user is a platform operator', async () => {
    const { gateway, client } = await gatewayWithClients()
    const { operator } = await signInOperator(gateway)
    const customer = await gateway.signUp()

    const [asOperator, asCustomer] = await Promise.all([client(operator.token).auth.me(), client(customer.token).auth.me()])

    expect([asOperator.is_operator, asCustomer.is_operator]).toEqual([true, false])
  })

  test('GET /v1/auth/me on the session cookie has is_operator and the CSRF token', async () => {
    const { gateway } = await gatewayWithClients()
    const { operator } = await signInOperator(gateway)
    const login = await gateway.send('POST', '/v1/auth/login', { body: { email: operator.email, password: operator.password, session: 'cookie' } })
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!

    const me = await gateway.send('GET', '/v1/auth/me', { headers: { cookie } })

    expect(me.json).toMatchObject({ email: operator.email, is_operator: true, csrf_token: login.json.csrf_token })
  })

  test('auth.resendVerification() mails the link again, and refuses an address that is verified already', async () => {
    const { gateway, client } = await gatewayWithClients()
    const unverified = await gateway.signUp({ verified: false })
    const verified = await gateway.signUp()

    const sent = await client(unverified.token).auth.resendVerification()
    const refused = await rejectionOf(client(verified.token).auth.resendVerification())

    expect(sent).toMatchObject({ object: 'email_verification', email: unverified.email, expires_at: expect.any(Number) })
    expect(gateway.mail.filter((message) => message.to === unverified.email)).toHaveLength(1)
    expect(refused).toMatchObject({ status: 409, code: 'conflict' })
  })

  test('auth.listSessions() gives one page of the active sessions, the current one marked; revokeSession() ends another', async () => {
    const { gateway, client } = await gatewayWithClients()
    const user = await gateway.signUp()
    const laptop = client(user.token)
    const phone = client('')
    await phone.auth.login({ email: user.email, password: user.password })
    const other = client(user.token)
    await other.auth.login({ email: user.email, password: user.password })

    const all = await laptop.auth.listSessions()
    const first = await laptop.auth.listSessions({ limit: 2 })
    const rest = await laptop.auth.listSessions({ limit: 2, after: first.last_id! })
    const phoneSession = (await phone.auth.listSessions()).data.find((session) => session.current)!
    const revoked = await laptop.auth.revokeSession(phoneSession.id)
    const phoneAfter = await rejectionOf(phone.auth.me())
    const again = await rejectionOf(laptop.auth.revokeSession(phoneSession.id))
    const left = await laptop.auth.listSessions()

    expect(all).toMatchObject({ object: 'list', has_more: false })
    expect(all.data).toHaveLength(3)
    expect(all.data.filter((session) => session.current)).toHaveLength(1)
    expect([first.data.length, first.has_more, rest.data.length, rest.has_more]).toEqual([2, true, 1, false])
    expect([...first.data, ...rest.data].map((session) => session.id)).toEqual(all.data.map((session) => session.id))
    expect(revoked).toEqual({ object: 'session.revoked', id: phoneSession.id, revoked: true })
    expect(phoneAfter).toMatchObject({ status: 401, code: 'token_revoked' })
    expect(again).toMatchObject({ status: 404, code: 'not_found' })
    expect(left.data.map((session) => session.id)).not.toContain(phoneSession.id)
    expect(left.data).toHaveLength(2)
  })
})
