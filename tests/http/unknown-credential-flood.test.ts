import { describe, expect, test } from 'bun:test'
import { AuthFailureLimiter } from '../../server/core/auth-failure-limiter'
import { guardedApp, madeUpKey } from '../support/guarded-app'

/** A limiter of 20 lookups and 2 a second, on a clock the test moves. */
function limiterOnClock() {
  const clock = { nowMs: 1_000_000 }
  return { clock, authFailures: new AuthFailureLimiter(20, 2, () => clock.nowMs) }
}

describe('a flood of made-up API keys from one client', () => {
  test('reaches the key store 20 times for 500 requests, then gets 429 with Retry-After', async () => {
    const { clock, authFailures } = limiterOnClock()
    const { chat, lookups } = await guardedApp({ authFailures })

    const answers: Response[] = []
    for (let i = 0; i < 500; i++) answers.push(await chat(madeUpKey()))

    expect(lookups.keys).toBe(20)
    expect(answers.slice(0, 20).map((response) => response.status)).toEqual(Array(20).fill(401))
    expect(answers.slice(20).every((response) => response.status === 429)).toBe(true)
    expect(answers[20]!.headers.get('retry-after')).toBe('1')
    expect((await answers[20]!.json()).error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' })
    clock.nowMs += 1_000
    await chat(madeUpKey())
    await chat(madeUpKey())
    await chat(madeUpKey())
    expect(lookups.keys).toBe(22)
  })

  test('sent all at once cannot overrun the allowance', async () => {
    const { authFailures } = limiterOnClock()
    const { chat, lookups } = await guardedApp({ authFailures })

    const statuses = (await Promise.all(Array.from({ length: 300 }, () => chat(madeUpKey())))).map((response) => response.status)

    expect(lookups.keys).toBe(20)
    expect(statuses.filter((status) => status === 401)).toHaveLength(20)
    expect(statuses.filter((status) => status === 429)).toHaveLength(280)
  })

  test('does not keep out a key already in memory', async () => {
    const { authFailures } = limiterOnClock()
    const { chat, secrets } = await guardedApp({ authFailures })
    expect((await chat(secrets[0]!)).status).toBe(200)

    for (let i = 0; i < 30; i++) await chat(madeUpKey())
    const known = await chat(secrets[0]!)

    expect(known.status).toBe(200)
  })

  test('the first requests of a new key, sent at once, share one lookup and one place of the allowance', async () => {
    const { chat, lookups, secrets } = await guardedApp({ authFailures: new AuthFailureLimiter(1, 1, () => 0) })

    const statuses = (await Promise.all(Array.from({ length: 50 }, () => chat(secrets[1]!)))).map((response) => response.status)

    expect(statuses).toEqual(Array(50).fill(200))
    expect(lookups.keys).toBe(1)
  })
})

describe('many real keys from one client, new to the gateway', () => {
  test('are all served when more of them are looked up at once than the allowance of unknown keys', async () => {
    const { chat, lookups, secrets } = await guardedApp({ authFailures: new AuthFailureLimiter(5, 0.001, () => 0), knownKeys: 60 })

    const statuses = (await Promise.all(secrets.map((secret) => chat(secret)))).map((response) => response.status)

    expect(statuses).toEqual(Array(60).fill(200))
    expect(lookups.keys).toBe(60)
  })

  test('beside a flood of made-up keys, wait for places rather than widen the bound', async () => {
    const { authFailures } = limiterOnClock()
    const { chat, lookups, secrets } = await guardedApp({ authFailures, knownKeys: 40 })

    const answers = await Promise.all([...Array.from({ length: 200 }, () => chat(madeUpKey())), ...secrets.map((secret) => chat(secret))])
    const madeUp = answers.slice(0, 200).map((response) => response.status)

    expect(lookups.keys - secrets.length).toBeLessThanOrEqual(20)
    expect(madeUp.filter((status) => status === 401).length + madeUp.filter((status) => status === 429).length).toBe(200)
  })
})

describe('a flood of made-up session tokens from one client', () => {
  test('reaches the session store a bounded number of times: the allowance plus the requests in flight', async () => {
    const { authFailures } = limiterOnClock()
    const { app, lookups } = await guardedApp({ authFailures })
    const request = () => app.handle(new Request('http://localhost/v1/organizations', { headers: { authorization: `Bearer ngs_${madeUpKey().slice(3)}` } }))

    const statuses: number[] = []
    for (let wave = 0; wave < 50; wave++) statuses.push(...(await Promise.all(Array.from({ length: 10 }, request))).map((response) => response.status))

    expect(lookups.sessions).toBeLessThanOrEqual(20 + 10)
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(500 - 30)
  })
})
