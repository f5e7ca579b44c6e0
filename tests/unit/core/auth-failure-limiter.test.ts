import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { addressGroup, AuthFailureLimiter } from '../../../server/core/auth-failure-limiter'

function refusal(run: () => void): GatewayError | null {
  try {
    run()
    return null
  } catch (error) {
    return error as GatewayError
  }
}

describe('AuthFailureLimiter', () => {
  test('lets an address start `burst` lookups, then, none under way, refuses with 429 saying when the next one comes back', () => {
    const limiter = new AuthFailureLimiter(3, 0.5, () => 0)

    for (let i = 0; i < 3; i++) {
      limiter.take('203.0.113.7')
      limiter.end('203.0.113.7', false)
    }
    const refused = refusal(() => limiter.take('203.0.113.7'))

    expect(refused?.code).toBe('rate_limit_exceeded')
    expect(refused?.retryAfterS).toBe(2)
    expect(refusal(() => limiter.take('203.0.113.8'))).toBeNull()
  })

  test('a lookup that found its credential gives its place back', () => {
    const limiter = new AuthFailureLimiter(1, 1, () => 0)

    limiter.take('203.0.113.7')
    limiter.end('203.0.113.7', true)

    expect(refusal(() => limiter.take('203.0.113.7'))).toBeNull()
  })

  test('a request that finds no place while lookups are under way waits for one to end, then finds the place a found credential gave back', async () => {
    const limiter = new AuthFailureLimiter(1, 0.001, () => 0)
    limiter.take('a')
    const wait = limiter.take('a')
    let woken = false
    void wait?.then(() => (woken = true))
    await Promise.resolve()
    const wokenBeforeEnd = woken

    limiter.end('a', true)
    await wait

    expect(wait).toBeInstanceOf(Promise)
    expect(wokenBeforeEnd).toBe(false)
    expect(refusal(() => limiter.take('a'))).toBeNull()
  })

  test('a request woken after a lookup found nothing, with none left under way, is refused', async () => {
    const limiter = new AuthFailureLimiter(1, 0.001, () => 0)
    limiter.take('a')
    const wait = limiter.take('a')

    limiter.end('a', false)
    await wait

    expect(refusal(() => limiter.take('a'))?.code).toBe('rate_limit_exceeded')
  })

  test('an address earns lookups back at `perSecond`, up to `burst`', () => {
    let nowMs = 0
    const limiter = new AuthFailureLimiter(2, 2, () => nowMs)
    const lookUpUnknown = () => {
      limiter.take('a')
      limiter.end('a', false)
    }
    lookUpUnknown()
    lookUpUnknown()

    nowMs = 500
    lookUpUnknown()
    const tooSoon = refusal(() => limiter.take('a'))
    nowMs = 60_000
    lookUpUnknown()
    lookUpUnknown()

    expect(tooSoon?.code).toBe('rate_limit_exceeded')
    expect(refusal(() => limiter.take('a'))?.code).toBe('rate_limit_exceeded')
  })

  test('charges failures after the fact, and caps the debt so a wave shuts an address out for a bounded time', () => {
    let nowMs = 0
    const limiter = new AuthFailureLimiter(2, 1, () => nowMs)

    for (let i = 0; i < 100; i++) limiter.charge('a')
    const refused = refusal(() => limiter.check('a'))
    nowMs = 3_000

    // From -2 (the cap) back to one lookup at one a second.
    expect(refused?.retryAfterS).toBe(3)
    expect(refusal(() => limiter.check('a'))).toBeNull()
  })

  test('keeps at most `maxAddresses` addresses, forgetting those with a full allowance first', () => {
    const limiter = new AuthFailureLimiter(1, 1, () => 0, 2)
    limiter.take('a')
    limiter.end('a', false)
    limiter.check('b')

    limiter.check('c')

    expect(refusal(() => limiter.take('a'))?.code).toBe('rate_limit_exceeded')
  })
})

describe('addressGroup', () => {
  test.each([
    ['203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2'],
    ['2001:DB8:1:2::9', '2001:db8:1:2'],
    ['2001:db8::1', '2001:db8:0:0'],
    ['::1', '0:0:0:0'],
    [null, 'unknown'],
  ])('%s is the client %s', (ip, group) => {
    expect(addressGroup(ip)).toBe(group)
  })
})
