import { afterAll, describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { createRedisClient, waitForRedis, type RedisClient } from '../../server/adapters/redis/client'
import { RedisLoginLimiter } from '../../server/adapters/redis/login-limiter'
import { randomBase62 } from '../../server/core/api-keys'
import { InProcessLoginLimiter, type LoginLimiter, type LoginLimits } from '../../server/core/login-limiter'
import { testRedisUrl } from '../support/admission-redis'
import { closedPort } from '../support/tcp-proxy'

/** The refusal `run` throws, or null when it passes. */
async function refusal(run: () => Promise<void>): Promise<GatewayError | null> {
  try {
    await run()
    return null
  } catch (error) {
    if (error instanceof GatewayError) return error
    throw error
  }
}

const clients: RedisClient[] = []
/** A client of the test Redis, connected. */
async function redisClient(): Promise<RedisClient> {
  const client = createRedisClient(testRedisUrl, { log: () => {} })
  clients.push(client)
  await waitForRedis(client, 5_000)
  return client
}

afterAll(async () => {
  const client = await redisClient()
  for (const prefix of prefixes) {
    const keys = await client.keys(`${prefix}*`)
    if (keys.length > 0) await client.del(keys)
  }
  for (const each of clients) each.destroy()
})

const prefixes: string[] = []
/** A key prefix of its own per limiter family, so tests and runs never share windows. */
function newPrefix(): string {
  const prefix = `test:${randomBase62(10)}:`
  prefixes.push(prefix)
  return prefix
}

type Clock = { nowMs: number }
/** Limiters over one set of windows (two for Redis: as on two gateway instances), on a clock the test moves. */
type Family = (limits: Partial<LoginLimits>, clock: Clock) => Promise<[LoginLimiter, LoginLimiter]>

const families: Array<{ name: string; make: Family }> = [
  {
    name: 'in process',
    make: async (limits, clock) => {
      const limiter = new InProcessLoginLimiter({ windowMs: 60_000, ...limits }, () => clock.nowMs)
      return [limiter, limiter]
    },
  },
  {
    name: 'in Redis',
    make: async (limits, clock) => {
      const keyPrefix = newPrefix()
      // Every call must reach Redis: a fallback to the local windows fails the test.
      const options = { limits: { windowMs: 60_000, ...limits }, keyPrefix, now: () => clock.nowMs, log: (line: string) => { throw new Error(line) } }
      return [new RedisLoginLimiter(await redisClient(), options), new RedisLoginLimiter(await redisClient(), options)]
    },
  },
]

describe.each(families)('login limits $name', ({ make }) => {
  async function clocked(limits: Partial<LoginLimits>) {
    // Redis scores are absolute times: start from now, then move by hand.
    const start = Date.now()
    const clock = { nowMs: start }
    const [limiter, other] = await make(limits, clock)
    return { limiter, other, at: (offsetMs: number) => (clock.nowMs = start + offsetMs) }
  }

  test('refuse an address after its failures fill the window, with the seconds until the oldest leaves', async () => {
    const { at, limiter } = await clocked({ failuresPerAccount: 2 })
    await limiter.recordFailure('ada@example.test')
    at(20_000)
    await limiter.recordFailure('ada@example.test')

    at(30_500)
    const refused = await refusal(() => limiter.checkAccount('ada@example.test'))

    expect(refused).toMatchObject({ code: 'rate_limit_exceeded', retryAfterS: 30 })
    expect(await refusal(() => limiter.checkAccount('bob@example.test'))).toBeNull()
  })

  test('slide: each failure leaves the window on its own, not all at a boundary', async () => {
    const { at, limiter } = await clocked({ failuresPerAccount: 2 })
    await limiter.recordFailure('ada@example.test')
    at(40_000)
    await limiter.recordFailure('ada@example.test')

    at(60_000)
    const afterFirstLeft = await refusal(() => limiter.checkAccount('ada@example.test'))
    await limiter.recordFailure('ada@example.test')
    const fullAgain = await refusal(() => limiter.checkAccount('ada@example.test'))

    expect(afterFirstLeft).toBeNull()
    expect(fullAgain?.retryAfterS).toBe(40)
  })

  test('forget the failures of an address after a successful login', async () => {
    const { limiter } = await clocked({ failuresPerAccount: 1 })
    await limiter.recordFailure('ada@example.test')

    await limiter.clearFailures('ada@example.test')

    expect(await refusal(() => limiter.checkAccount('ada@example.test'))).toBeNull()
  })

  test('count attempts per IP; refused attempts do not count, and an unknown peer is not limited', async () => {
    const { at, limiter } = await clocked({ attemptsPerIp: 2 })
    await limiter.admitAttempt('203.0.113.7')
    await limiter.admitAttempt('203.0.113.7')

    at(59_000)
    const refused = await refusal(() => limiter.admitAttempt('203.0.113.7'))
    at(60_000)
    const admitted = await refusal(() => limiter.admitAttempt('203.0.113.7'))

    expect(refused?.message).toBe('Too many attempts from your address; retry in 1 second.')
    expect(admitted).toBeNull()
    expect(await refusal(() => limiter.admitAttempt('198.51.100.1'))).toBeNull()
    expect(await refusal(async () => { for (let i = 0; i < 3; i++) await limiter.admitAttempt(null) })).toBeNull()
  })

  test('limit verification mails per user', async () => {
    const { limiter } = await clocked({ mailsPerAccount: 1 })
    await limiter.admitMail('user_a')

    expect((await refusal(() => limiter.admitMail('user_a')))?.code).toBe('rate_limit_exceeded')
    expect(await refusal(() => limiter.admitMail('user_b'))).toBeNull()
  })

  test('hold across instances sharing the windows', async () => {
    const { limiter, other } = await clocked({ failuresPerAccount: 2, attemptsPerIp: 2 })
    await limiter.recordFailure('ada@example.test')
    await other.recordFailure('ada@example.test')
    await limiter.admitAttempt('203.0.113.7')
    await other.admitAttempt('203.0.113.7')

    expect((await refusal(() => other.checkAccount('ada@example.test')))?.code).toBe('rate_limit_exceeded')
    expect((await refusal(() => limiter.admitAttempt('203.0.113.7')))?.code).toBe('rate_limit_exceeded')
  })
})

describe('login limits in Redis', () => {
  test('keep no address, IP or user id in Redis, only hashes of them', async () => {
    const keyPrefix = newPrefix()
    const limiter = new RedisLoginLimiter(await redisClient(), { keyPrefix, log: (line) => { throw new Error(line) } })
    await limiter.recordFailure('ada@example.test')
    await limiter.admitAttempt('203.0.113.7')
    await limiter.admitMail('user_a')

    const keys = await (await redisClient()).keys(`${keyPrefix}*`)
    expect(keys).toHaveLength(3)
    for (const key of keys) expect(key).toMatch(new RegExp(`^${keyPrefix}nilegate:login:(failures|attempts|mails):[0-9a-f]{64}$`))
  })

  test("fall back to the instance's own windows while Redis cannot answer, and say so once", async () => {
    const logged: string[] = []
    const unreachable = createRedisClient(`redis://127.0.0.1:${closedPort()}`, { log: () => {} })
    clients.push(unreachable)
    const limiter = new RedisLoginLimiter(unreachable, { limits: { failuresPerAccount: 2 }, log: (line) => logged.push(line) })
    await limiter.recordFailure('ada@example.test')
    await limiter.recordFailure('ada@example.test')

    expect((await refusal(() => limiter.checkAccount('ada@example.test')))?.code).toBe('rate_limit_exceeded')
    await limiter.clearFailures('ada@example.test')
    expect(await refusal(() => limiter.checkAccount('ada@example.test'))).toBeNull()
    expect(logged).toEqual([expect.stringContaining("fall back to this instance's own windows")])
  })
})
