import { afterAll, describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { createRedisClient, waitForRedis, type RedisClient } from '../../server/adapters/redis/client'
import { RedisLoginLimiter } from '../../server/adapters/redis/login-limiter'
import { randomBase62 } from '../../server/core/api-keys'
import { InProcessLoginLimiter, type LoginLimiter, type LoginLimits } from '../../server/core/login-limiter'
import { testRedisUrl } from '../support/redis-server'
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

/** A password check of `email` from `ip` that fails: admitted, and never told it succeeded. */
async function failLogin(limiter: LoginLimiter, email: string, ip: string | null): Promise<void> {
  await limiter.admitLogin(email, ip)
}

const clients: RedisClient[] = []
/** A client of the test Redis, connected. */
async function redisClient(): Promise<RedisClient> {
  const client = createRedisClient(await testRedisUrl(), { log: () => {} })
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

  test('lock an (address, IP) pair after its failures fill the window, with the seconds until the oldest leaves', async () => {
    const { at, limiter } = await clocked({ failuresPerAccountAndIp: 2 })
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')
    at(20_000)
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')

    at(30_500)
    const refused = await refusal(() => failLogin(limiter, 'ada@example.test', '203.0.113.7'))

    expect(refused).toMatchObject({ code: 'rate_limit_exceeded', retryAfterS: 30, message: 'Too many failed logins for this account from your address; retry in 30 seconds.' })
    expect(await refusal(() => failLogin(limiter, 'ada@example.test', '198.51.100.1'))).toBeNull()
    expect(await refusal(() => failLogin(limiter, 'bob@example.test', '203.0.113.7'))).toBeNull()
  })

  test('slide: each failure leaves the window on its own, not all at a boundary', async () => {
    const { at, limiter } = await clocked({ failuresPerAccountAndIp: 2 })
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')
    at(40_000)
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')

    at(60_000)
    const afterFirstLeft = await refusal(() => failLogin(limiter, 'ada@example.test', '203.0.113.7'))
    const fullAgain = await refusal(() => failLogin(limiter, 'ada@example.test', '203.0.113.7'))

    expect(afterFirstLeft).toBeNull()
    expect(fullAgain?.retryAfterS).toBe(40)
  })

  test("let the owner in from their own IP while a stranger's failures from elsewhere fill every window", async () => {
    const { limiter } = await clocked({})
    const strangerIps = ['198.51.100.66', ...Array.from({ length: 10 }, (_, i) => `192.0.2.${i + 1}`)]
    const strangerOutcomes: Array<string | undefined> = []
    for (const ip of strangerIps) for (let i = 0; i < 50; i++) strangerOutcomes.push((await refusal(() => failLogin(limiter, 'owner@example.test', ip)))?.code)

    const owner = await refusal(async () => (await limiter.admitLogin('owner@example.test', '203.0.113.7')).succeeded())

    expect(strangerOutcomes).toContain('rate_limit_exceeded')
    expect(owner).toBeNull()
  })

  test('slow down, without locking, an address failing from many IPs: only IPs that failed for it wait, a few seconds at most', async () => {
    const { at, limiter } = await clocked({ failuresBeforeBackoff: 3, maxBackoffMs: 4_000 })
    for (const ip of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) await failLogin(limiter, 'ada@example.test', ip)
    const waits: Array<number | undefined> = []

    for (let t = 0; t < 4; t++) {
      waits.push((await refusal(() => failLogin(limiter, 'ada@example.test', '192.0.2.1')))?.retryAfterS)
      at(t * 10_000 + 10_000)
      await failLogin(limiter, 'ada@example.test', '192.0.2.1')
    }
    const clean = await refusal(() => failLogin(limiter, 'ada@example.test', '203.0.113.7'))
    at(40_000 + 3_999)
    const stillWaiting = await refusal(() => failLogin(limiter, 'ada@example.test', '192.0.2.2'))
    at(40_000 + 4_000)
    const waited = await refusal(() => failLogin(limiter, 'ada@example.test', '192.0.2.2'))

    expect(waits).toEqual([1, 2, 4, 4])
    expect(stillWaiting).toMatchObject({ retryAfterS: 1, message: 'Failed logins for this account are being slowed down; retry in 1 second.' })
    expect(clean).toBeNull()
    expect(waited).toBeNull()
  })

  test('a success forgets the failures of its address from its IP and is not counted against the IP', async () => {
    const { limiter } = await clocked({ failuresPerAccountAndIp: 2, attemptsPerIp: 3 })
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')

    for (let i = 0; i < 5; i++) await (await limiter.admitLogin('ada@example.test', '203.0.113.7')).succeeded()

    await failLogin(limiter, 'ada@example.test', '203.0.113.7')
    expect(await refusal(() => failLogin(limiter, 'ada@example.test', '203.0.113.7'))).toBeNull()
  })

  test('count concurrent attempts from the moment they are admitted, so a burst cannot pass the pair limit', async () => {
    const { limiter } = await clocked({ failuresPerAccountAndIp: 5 })

    const outcomes = await Promise.all(Array.from({ length: 20 }, () => refusal(() => failLogin(limiter, 'ada@example.test', '203.0.113.7'))))

    expect(outcomes.filter((outcome) => outcome === null)).toHaveLength(5)
  })

  test('count an IPv6 client by its /64', async () => {
    const { limiter } = await clocked({ failuresPerAccountAndIp: 2 })
    await failLogin(limiter, 'ada@example.test', '2001:db8:1:2::1')
    await failLogin(limiter, 'ada@example.test', '2001:db8:1:2:ffff::9')

    expect((await refusal(() => failLogin(limiter, 'ada@example.test', '2001:0db8:0001:0002:0:0:0:abcd')))?.code).toBe('rate_limit_exceeded')
    expect(await refusal(() => failLogin(limiter, 'ada@example.test', '2001:db8:1:3::1'))).toBeNull()
  })

  test('count failed logins, sign-ups and verifications per IP; refused attempts do not count, and an unknown peer is not limited', async () => {
    const { at, limiter } = await clocked({ attemptsPerIp: 3 })
    await limiter.admitAttempt('203.0.113.7')
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')
    await limiter.admitAttempt('203.0.113.7')

    at(59_000)
    const refused = await refusal(() => limiter.admitAttempt('203.0.113.7'))
    const refusedLogin = await refusal(() => failLogin(limiter, 'bob@example.test', '203.0.113.7'))
    at(60_000)
    const admitted = await refusal(() => failLogin(limiter, 'bob@example.test', '203.0.113.7'))

    expect(refused?.message).toBe('Too many attempts from your address; retry in 1 second.')
    expect(refusedLogin?.message).toBe('Too many attempts from your address; retry in 1 second.')
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
    const { limiter, other } = await clocked({ failuresPerAccountAndIp: 2, attemptsPerIp: 3 })
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')
    await failLogin(other, 'ada@example.test', '203.0.113.7')
    await limiter.admitAttempt('203.0.113.7')

    expect((await refusal(() => failLogin(other, 'ada@example.test', '203.0.113.7')))?.code).toBe('rate_limit_exceeded')
    expect((await refusal(() => other.admitAttempt('203.0.113.7')))?.code).toBe('rate_limit_exceeded')
  })
})

describe('login limits in Redis', () => {
  test('keep no address, IP or user id in Redis, only hashes of them', async () => {
    const keyPrefix = newPrefix()
    const limiter = new RedisLoginLimiter(await redisClient(), { keyPrefix, log: (line) => { throw new Error(line) } })
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')
    await limiter.admitMail('user_a')

    const keys = await (await redisClient()).keys(`${keyPrefix}*`)
    expect(keys.sort()).toEqual([
      expect.stringMatching(new RegExp(`^${keyPrefix}nilegate:login:attempts:[0-9a-f]{64}$`)),
      expect.stringMatching(new RegExp(`^${keyPrefix}nilegate:login:mails:[0-9a-f]{64}$`)),
      expect.stringMatching(new RegExp(`^${keyPrefix}nilegate:login:\\{[0-9a-f]{64}\\}:failures$`)),
      expect.stringMatching(new RegExp(`^${keyPrefix}nilegate:login:\\{[0-9a-f]{64}\\}:pair:[0-9a-f]{64}$`)),
    ])
  })

  test("fall back to the instance's own windows while Redis cannot answer, and say so once", async () => {
    const logged: string[] = []
    const unreachable = createRedisClient(`redis://127.0.0.1:${closedPort()}`, { log: () => {} })
    clients.push(unreachable)
    const limiter = new RedisLoginLimiter(unreachable, { limits: { failuresPerAccountAndIp: 2 }, log: (line) => logged.push(line) })
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')
    await failLogin(limiter, 'ada@example.test', '203.0.113.7')

    expect((await refusal(() => failLogin(limiter, 'ada@example.test', '203.0.113.7')))?.code).toBe('rate_limit_exceeded')
    expect(await refusal(() => failLogin(limiter, 'ada@example.test', '198.51.100.1'))).toBeNull()
    expect(logged).toEqual([expect.stringContaining("fall back to this instance's own windows")])
  })
})
