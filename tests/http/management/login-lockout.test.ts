import { expect, test } from 'bun:test'
import { InProcessLoginLimiter } from '../../../server/core/login-limiter'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'

/** The gateway on a socket behind a trusted proxy at 127.0.0.1, so each request names its client IP in X-Forwarded-For. */
async function gatewayBehindProxy(database: Parameters<typeof managementApp>[0], options: Parameters<typeof managementApp>[1] = {}) {
  const gateway = await managementApp(database, { trustedProxies: ['127.0.0.1'], ...options })
  const server = gateway.listen()
  async function logIn(from: string, email: string, password: string) {
    const response = await fetch(`${server.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
      body: JSON.stringify({ email, password }),
    })
    return { status: response.status, retryAfter: response.headers.get('retry-after'), json: (await response.json()) as any }
  }
  return { gateway, logIn, stop: server.stop }
}

describeEachDatabase('POST /v1/auth/login under attack', (context) => {
  test("a stranger's 50 wrong passwords from another IP do not stop the owner logging in from theirs", async () => {
    const { gateway, logIn, stop } = await gatewayBehindProxy(context.current.db)
    try {
      const owner = await gateway.signUp()
      const strangerStatuses: number[] = []
      for (let i = 0; i < 50; i++) strangerStatuses.push((await logIn('198.51.100.66', owner.email, `guess ${i}`)).status)

      const ownerLogin = await logIn('203.0.113.7', owner.email, owner.password)

      expect(strangerStatuses.slice(0, 10)).toEqual(Array(10).fill(401))
      expect(new Set(strangerStatuses.slice(10))).toEqual(new Set([429]))
      expect(ownerLogin.status).toBe(200)
    } finally {
      stop()
    }
  })

  test('failures over the per-pair limit answer 429 with Retry-After and the envelope, even with the right password, from that IP only', async () => {
    let nowMs = 1_000_000
    const limiter = new InProcessLoginLimiter({ failuresPerAccountAndIp: 2, windowMs: 60_000 }, () => nowMs)
    const { gateway, logIn, stop } = await gatewayBehindProxy(context.current.db, { loginLimiter: limiter })
    try {
      const user = await gateway.signUp()
      expect((await logIn('198.51.100.66', user.email, 'wrong one')).status).toBe(401)
      nowMs += 10_000
      expect((await logIn('198.51.100.66', user.email, 'wrong two')).status).toBe(401)

      const locked = await logIn('198.51.100.66', user.email, user.password)
      const elsewhere = await logIn('203.0.113.7', user.email, user.password)
      nowMs += 50_000
      const afterFirstLeft = await logIn('198.51.100.66', user.email, user.password)

      expect(locked).toEqual({
        status: 429,
        retryAfter: '50',
        json: { error: { type: 'rate_limit_error', code: 'rate_limit_exceeded', message: 'Too many failed logins for this account from your address; retry in 50 seconds.', param: null } },
      })
      expect(elsewhere.status).toBe(200)
      expect(afterFirstLeft.status).toBe(200)
    } finally {
      stop()
    }
  })

  test('an address failing from many IPs slows down, with a small Retry-After, only the IPs that failed for it', async () => {
    const limiter = new InProcessLoginLimiter({ failuresBeforeBackoff: 3 }, () => 1_000_000)
    const { gateway, logIn, stop } = await gatewayBehindProxy(context.current.db, { loginLimiter: limiter })
    try {
      const user = await gateway.signUp()
      for (const ip of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) expect((await logIn(ip, user.email, 'a guess')).status).toBe(401)

      const slowed = await logIn('192.0.2.1', user.email, user.password)
      const clean = await logIn('203.0.113.7', user.email, user.password)

      expect(slowed).toMatchObject({ status: 429, retryAfter: '1', json: { error: { code: 'rate_limit_exceeded' } } })
      expect(clean.status).toBe(200)
    } finally {
      stop()
    }
  })
})
