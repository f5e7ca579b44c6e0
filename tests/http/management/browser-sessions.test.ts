import { expect, test } from 'bun:test'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, type SignedInUser } from '../../support/management-app'

type Gateway = Awaited<ReturnType<typeof managementApp>>

/** Logs `user` in for a browser: the Cookie header to send back, the CSRF token, and the whole answer. */
async function cookieLogin(gateway: Gateway, user: SignedInUser) {
  const login = await gateway.send('POST', '/v1/auth/login', { body: { email: user.email, password: user.password, session: 'cookie' } })
  const setCookie = login.headers.get('set-cookie') ?? ''
  const token = /^nilegate_session=([^;]*)/.exec(setCookie)?.[1]
  if (login.status !== 200 || !token) throw new Error(`cookie login failed: ${login.status} ${login.text} ${setCookie}`)
  return { login, setCookie, cookie: `nilegate_session=${token}`, csrf: login.json.csrf_token as string }
}

/** The attributes of a Set-Cookie value, lower-cased names: `{ path: '/v1', httponly: true, ... }`. */
function cookieAttributes(setCookie: string): Record<string, string | true> {
  const [, ...attributes] = setCookie.split(';').map((part) => part.trim())
  return Object.fromEntries(attributes.map((attribute) => {
    const [name, value] = attribute.split('=')
    return [name!.toLowerCase(), value ?? true]
  }))
}

describeEachDatabase('browser sessions: the session cookie and its CSRF token', (context) => {
  test('a cookie login sets an httpOnly, SameSite=Strict cookie on /v1 for 12 hours, and answers the CSRF token instead of the access token', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()

    const { login, setCookie, cookie, csrf } = await cookieLogin(gateway, user)

    expect(login.json).toEqual({ object: 'session', id: expect.stringMatching(/^sess_/), token_type: 'cookie', csrf_token: expect.stringMatching(/^[\w-]{43}$/), expires_at: expect.any(Number), user: expect.objectContaining({ id: user.user.id }) })
    expect(login.text).not.toContain('ngs_')
    expect(login.headers.get('cache-control')).toBe('no-store')
    expect(cookie).toMatch(/^nilegate_session=ngs_[0-9A-Za-z]{48}$/)
    expect(cookieAttributes(setCookie)).toEqual({ path: '/v1', 'max-age': '43200', httponly: true, samesite: 'Strict' })
    expect(csrf).not.toBe(cookie.slice('nilegate_session='.length))
  })

  test('the cookie is Secure when the login came over https, directly or as a trusted proxy says, and not on the word of anyone else', async () => {
    const direct = await managementApp(context.current.db)
    const user = await direct.signUp()
    const body = JSON.stringify({ email: user.email, password: user.password, session: 'cookie' })
    const overHttps = await direct.app.handle(new Request('https://localhost/v1/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body }))
    const behindProxy = await managementApp(context.current.db, { trustedProxies: ['127.0.0.1'] })
    const proxied = behindProxy.listen()
    const untrusted = direct.listen()
    try {
      const login = (url: string) => fetch(`${url}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' }, body })

      const viaTrustedProxy = await login(proxied.url)
      const viaStranger = await login(untrusted.url)

      expect(overHttps.status).toBe(200)
      expect(cookieAttributes(overHttps.headers.get('set-cookie')!).secure).toBe(true)
      expect(viaTrustedProxy.status).toBe(200)
      expect(cookieAttributes(viaTrustedProxy.headers.get('set-cookie')!).secure).toBe(true)
      expect(viaStranger.status).toBe(200)
      expect(cookieAttributes(viaStranger.headers.get('set-cookie')!).secure).toBeUndefined()
    } finally {
      proxied.stop()
      untrusted.stop()
    }
  })

  test('a read with the cookie works; /v1/auth/me then repeats the CSRF token, which a bearer token does not get', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const { cookie, csrf } = await cookieLogin(gateway, user)

    const me = await gateway.send('GET', '/v1/auth/me', { headers: { cookie: `theme=dark; ${cookie}` } })
    const sessions = await gateway.send('GET', '/v1/auth/sessions', { headers: { cookie } })
    const bearer = await gateway.send('GET', '/v1/auth/me', { token: user.token })

    expect(me.status).toBe(200)
    expect(me.json).toMatchObject({ object: 'user', id: user.user.id, csrf_token: csrf })
    expect(sessions.status).toBe(200)
    expect(sessions.json.data).toHaveLength(2)
    expect(bearer.status).toBe(200)
    expect(bearer.json.csrf_token).toBeUndefined()
  })

  test('a change with the cookie needs the X-CSRF-Token header: 403 without it or with another, done with it', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const other = await gateway.signUp()
    const { cookie, csrf } = await cookieLogin(gateway, user)
    const { csrf: othersCsrf } = await cookieLogin(gateway, other)

    const without = await gateway.send('POST', '/v1/organizations', { headers: { cookie }, body: { name: 'Forged' } })
    const wrong = await gateway.send('POST', '/v1/organizations', { headers: { cookie, 'x-csrf-token': othersCsrf }, body: { name: 'Forged' } })
    const deleteWithout = await gateway.send('DELETE', '/v1/auth/me', { headers: { cookie }, body: { password: user.password } })
    const made = await gateway.send('POST', '/v1/organizations', { headers: { cookie, 'x-csrf-token': csrf }, body: { name: 'Mine' } })
    const organizations = await gateway.send('GET', '/v1/auth/me', { token: user.token })

    for (const refused of [without, wrong, deleteWithout]) {
      expect(refused.status).toBe(403)
      expect(refused.json.error).toMatchObject({ type: 'permission_denied', code: 'permission_denied' })
      expect(refused.json.error.message).toContain('X-CSRF-Token')
    }
    expect(made.status).toBe(201)
    expect(organizations.json.memberships).toEqual([{ organization_id: made.json.id, organization_name: 'Mine', role: 'owner' }])
  })

  test('the Authorization header wins over the cookie, and needs no CSRF token', async () => {
    const gateway = await managementApp(context.current.db)
    const cookieUser = await gateway.signUp()
    const bearerUser = await gateway.signUp()
    const { cookie } = await cookieLogin(gateway, cookieUser)

    const me = await gateway.send('GET', '/v1/auth/me', { token: bearerUser.token, headers: { cookie } })
    const made = await gateway.send('POST', '/v1/organizations', { token: bearerUser.token, headers: { cookie }, body: { name: 'By bearer' } })
    const badBearer = await gateway.send('GET', '/v1/auth/me', { token: 'ngs_nothing', headers: { cookie } })

    expect(me.json.id).toBe(bearerUser.user.id)
    expect(made.status).toBe(201)
    expect(badBearer.status).toBe(401)
    expect(badBearer.json.error.code).toBe('invalid_api_key')
  })

  test('logout clears the cookie, and the session it held then answers 401 token_revoked', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const { login, cookie, csrf } = await cookieLogin(gateway, user)

    const logout = await gateway.send('POST', '/v1/auth/logout', { headers: { cookie, 'x-csrf-token': csrf } })
    const after = await gateway.send('GET', '/v1/auth/me', { headers: { cookie } })

    expect(logout.status).toBe(200)
    expect(logout.json).toEqual({ object: 'session.revoked', id: login.json.id, revoked: true })
    const cleared = logout.headers.get('set-cookie')!
    expect(cleared).toStartWith('nilegate_session=;')
    expect(cookieAttributes(cleared)).toMatchObject({ path: '/v1', 'max-age': '0' })
    expect(after.status).toBe(401)
    expect(after.json.error.code).toBe('token_revoked')
  })

  test('a session revoked from elsewhere answers 401 token_revoked through its cookie; ending one\'s own session clears the cookie', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const first = await cookieLogin(gateway, user)
    const second = await cookieLogin(gateway, user)

    const revoked = await gateway.send('DELETE', `/v1/auth/sessions/${first.login.json.id}`, { token: user.token })
    const use = await gateway.send('GET', '/v1/auth/me', { headers: { cookie: first.cookie } })
    const own = await gateway.send('DELETE', `/v1/auth/sessions/${second.login.json.id}`, { headers: { cookie: second.cookie, 'x-csrf-token': second.csrf } })

    expect(revoked.status).toBe(200)
    expect(revoked.headers.get('set-cookie')).toBeNull()
    expect(use.status).toBe(401)
    expect(use.json.error.code).toBe('token_revoked')
    expect(own.status).toBe(200)
    expect(own.headers.get('set-cookie')).toStartWith('nilegate_session=;')
  })

  test('inference routes ignore the cookie: 401 as without credentials', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const { cookie, csrf } = await cookieLogin(gateway, user)
    const chat = { model: 'any', messages: [{ role: 'user', content: 'Hi' }] }

    const answers = await Promise.all([
      gateway.send('POST', '/v1/chat/completions', { headers: { cookie, 'x-csrf-token': csrf }, body: chat }),
      gateway.send('POST', '/v1/embeddings', { headers: { cookie, 'x-csrf-token': csrf }, body: { model: 'any', input: 'Hi' } }),
      gateway.send('GET', '/v1/models', { headers: { cookie } }),
    ])
    const bare = await gateway.send('POST', '/v1/chat/completions', { body: chat })

    expect(bare.status).toBe(401)
    for (const answer of answers) {
      expect(answer.status).toBe(401)
      expect(answer.json.error).toEqual(bare.json.error)
    }
  })

  test('the playground takes the cookie with its CSRF token', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    await gateway.createOrganization(user)
    const { cookie, csrf } = await cookieLogin(gateway, user)
    const chat = { model: 'any', messages: [{ role: 'user', content: 'Hi' }] }

    const forged = await gateway.send('POST', '/v1/playground/chat/completions', { headers: { cookie }, body: chat })
    const allowed = await gateway.send('POST', '/v1/playground/chat/completions', { headers: { cookie, 'x-csrf-token': csrf }, body: chat })

    expect(forged.status).toBe(403)
    expect(forged.json.error.message).toContain('X-CSRF-Token')
    // Past authentication: the playground asks which project to bill.
    expect(allowed.status).toBe(400)
    expect(allowed.json.error.param).toBe('OpenAI-Project')
  })

  test('no answer lets another origin read with credentials: no Access-Control-Allow-Credentials, preflights included', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const { cookie } = await cookieLogin(gateway, user)
    const origin = { origin: 'https://elsewhere.example' }

    const preflight = await gateway.send('OPTIONS', '/v1/auth/me', { headers: { ...origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-csrf-token' } })
    const read = await gateway.send('GET', '/v1/auth/me', { headers: { ...origin, cookie } })
    const login = await gateway.send('POST', '/v1/auth/login', { headers: origin, body: { email: user.email, password: user.password, session: 'cookie' } })

    for (const answer of [preflight, read, login]) {
      expect(answer.headers.get('access-control-allow-credentials')).toBeNull()
      expect(answer.headers.get('access-control-allow-origin')).toBe('*')
    }
  })
})

describeEachDatabase('opening a cookie session from another site', (context) => {
  test('is refused, so no page elsewhere signs a browser in to an account of its choosing; the same origin and clients that are no browser are let in', async () => {
    const gateway = await managementApp(context.current.db)
    const user = await gateway.signUp()
    const login = (headers: Record<string, string>) => gateway.send('POST', '/v1/auth/login', { headers: { 'content-type': 'text/plain', ...headers }, body: { email: user.email, password: user.password, session: 'cookie' } })

    const crossSite = await login({ 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' })
    const sameSite = await login({ 'sec-fetch-site': 'same-site', origin: 'https://other.localhost' })
    const foreignOrigin = await login({ origin: 'https://evil.example' })
    const sameOrigin = await login({ 'sec-fetch-site': 'same-origin', origin: 'http://localhost' })
    const originOnly = await login({ origin: 'http://localhost' })
    const noBrowser = await login({})

    for (const refused of [crossSite, sameSite, foreignOrigin]) {
      expect(refused.status).toBe(403)
      expect(refused.json.error.code).toBe('permission_denied')
      expect(refused.headers.get('set-cookie')).toBeNull()
    }
    for (const allowed of [sameOrigin, originOnly, noBrowser]) {
      expect(allowed.status).toBe(200)
      expect(allowed.headers.get('set-cookie')).toStartWith('nilegate_session=ngs_')
    }
  })
})
