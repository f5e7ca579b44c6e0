import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { OrgKeys } from '../../../server/adapters/redis/admission-scripts'
import { RedisAdmissionStore } from '../../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis } from '../../../server/adapters/redis/client'
import type { AdmitRequest, AdmitResult, Settlement } from '../../../server/core/admission'
import { describeAdmissionStore } from '../../support/admission-conformance'
import { openRedisStores, type TestRedisStores } from '../../support/admission-redis'
import { admitRequest, midJanuaryMs, newOrgId, orgCounters, settlementOf } from '../../support/admission-requests'
import { testRedisUrl } from '../../support/redis-server'
import { waitFor } from '../../support/wait-for'

describeAdmissionStore(
  'RedisAdmissionStore with leases (two gateways on one Redis)',
  async () => {
    const opened = await openRedisStores(2, { leaseMs: 1_000 })
    return { stores: [opened.stores[0]!, opened.stores[1]!], close: () => opened.close() }
  },
  { leases: true },
)

/** Every admission in `times` (ms) and the most of them in any window of 60 s. */
function busiestMinute(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b)
  let most = 0
  for (let last = 0, first = 0; last < sorted.length; last++) {
    while (sorted[first]! <= sorted[last]! - 60_000) first++
    most = Math.max(most, last - first + 1)
  }
  return most
}

describe('RedisAdmissionStore leases', () => {
  const leaseMs = 1_000
  let redis: TestRedisStores

  beforeAll(async () => {
    redis = await openRedisStores(2, { leaseMs })
  })
  afterAll(async () => {
    await redis.close()
  })

  async function organization(balanceMicros: bigint) {
    const orgId = newOrgId()
    await redis.stores[0]!.load(orgId, orgCounters(balanceMicros))
    return { orgId, keys: new OrgKeys(redis.keyPrefix, orgId), request: (overrides: Partial<AdmitRequest> = {}) => admitRequest({ orgId, ...overrides }) }
  }

  test('admits a busy key from a lease, then leaves the window and the holds as exact admissions would', async () => {
    const [store] = redis.stores
    const { orgId, keys, request } = await organization(1_000_000n)
    const t0 = Date.now()
    const requests = [0, 10, 20, 30].map((offset) => request({ nowMs: t0 + offset }))
    const results: AdmitResult[] = []
    for (const one of requests) results.push(await store!.admit(one))
    const client = redis.clients[0]!
    const windowWhileLeased = await client.zRangeWithScores(keys.window('key_a'), 0, -1)

    // The second asked for a lease of 4, of which the third and fourth took two without Redis.
    expect(results.map((result) => result.admitted && result.remaining)).toEqual([999, 998, 997, 996])
    expect(store!.leased).toEqual({ leases: 1, requests: 3 })
    expect(windowWhileLeased.length).toBe(5)
    expect((await store!.snapshot(orgId, currentMonth()))!.heldMicros).toBe(5_000n)

    // The lease ends within leaseMs: its unused slot and money are given back, the used slots scored at their admissions.
    await waitFor(async () => store!.leased.leases === 0 && (await client.zCard(keys.window('key_a'))) === 4, { timeoutMs: 5_000 })
    const window = await client.zRangeWithScores(keys.window('key_a'), 0, -1)
    expect(window.map((entry) => entry.score).sort()).toEqual(requests.map((one) => one.nowMs))
    const month = (results[0] as { month: string }).month
    expect((await store!.snapshot(orgId, month))!.heldMicros).toBe(4_000n)

    for (const [index, one] of requests.entries()) await store!.settle(settlementOf(one, results[index] as { month: string }, { costMicros: 250n }))
    const settled = (await store!.snapshot(orgId, month))!
    expect([settled.balanceMicros, settled.heldMicros, settled.reservations]).toEqual([999_000n, 0n, []])
    expect(store!.leased).toEqual({ leases: 0, requests: 0 })
  })

  test('two gateways under leases never admit more than the limit in any minute, nor hold more than the balance', async () => {
    const { orgId, request } = await organization(2_000_000n)
    const rpmLimit = 120
    const admittedAt: number[] = []
    const open: Array<{ request: AdmitRequest; month: string; on: number }> = []
    let charged = 0n
    const t0 = midJanuaryMs
    // Three minutes in steps of 250 ms: bursts of 8 on one key, alternating gateways, settled a step later.
    for (let step = 0; step < 720; step++) {
      const nowMs = t0 + step * 250
      const burst = Array.from({ length: 8 }, () => request({ nowMs, rpmLimit, worstCaseMicros: 2_000n }))
      const results = await Promise.all(burst.map((one, i) => redis.stores[(step + i) % 2]!.admit(one)))
      const settling = open.splice(0)
      const settlements: Promise<unknown>[] = []
      for (const { request: one, month, on } of settling) {
        const cost = BigInt(Math.floor(Math.random() * 2_001))
        charged += cost
        settlements.push(redis.stores[on]!.settle({ ...settlementOf(one, { month }, { costMicros: cost }), nowMs } satisfies Settlement))
      }
      await Promise.all(settlements)
      results.forEach((result, i) => {
        if (!result.admitted) return
        admittedAt.push(nowMs)
        open.push({ request: burst[i]!, month: result.month, on: (step + i) % 2 })
      })
      if (step % 60 === 0) {
        const taken = (await redis.stores[0]!.snapshot(orgId, '202501'))!
        expect(taken.balanceMicros - taken.heldMicros).toBeGreaterThanOrEqual(0n)
      }
    }
    for (const { request: one, month, on } of open) {
      charged += 1_000n
      await redis.stores[on]!.settle(settlementOf(one, { month }, { costMicros: 1_000n }))
    }

    expect(busiestMinute(admittedAt)).toBeLessThanOrEqual(rpmLimit)
    // Leases may refuse early while they last, by what they have not used: most of the limit is still served.
    expect(admittedAt.length).toBeGreaterThan(3 * rpmLimit * 0.8)
    await waitFor(() => redis.stores.every((store) => store.leased.leases === 0), { timeoutMs: 5_000 })
    await waitFor(async () => (await redis.stores[0]!.snapshot(orgId, '202501'))!.heldMicros === 0n, { timeoutMs: 5_000 })
    expect((await redis.stores[0]!.snapshot(orgId, '202501'))!.balanceMicros).toBe(2_000_000n - charged)
  }, 60_000)

  test('takes at most a quarter of the balance not held for a lease, and never holds more than the balance', async () => {
    const [store, other] = redis.stores
    const { orgId, request } = await organization(40_000n)
    const t0 = Date.now()
    await store!.admit(request({ nowMs: t0, worstCaseMicros: 1_000n }))
    await store!.admit(request({ nowMs: t0 + 1, worstCaseMicros: 1_000n }))
    const month = currentMonth()
    const leased = (await store!.snapshot(orgId, month))!

    // 39,000 not held: a quarter is 9 requests' worth, of the 4 slots asked for.
    expect(leased.heldMicros).toBe(1_000n + 4_000n)
    // The other gateway is admitted exactly up to what is left: 35 more.
    const rest = await Promise.all(Array.from({ length: 40 }, () => other!.admit(request({ nowMs: t0 + 2, keyId: 'key_b', worstCaseMicros: 1_000n }))))
    expect(rest.filter((result) => result.admitted).length).toBe(35)
    const full = (await store!.snapshot(orgId, month))!
    expect(full.heldMicros).toBe(40_000n)
    expect(full.balanceMicros).toBe(40_000n)
  })

  test('a gateway that dies with a lease leaves its money held only until the lease hold expires', async () => {
    const dying = await openRedisStores(1, { leaseMs })
    const client = createRedisClient(await testRedisUrl(), { log: () => {} })
    try {
      const orgId = newOrgId()
      await dying.stores[0]!.load(orgId, orgCounters(100_000n))
      const t0 = midJanuaryMs
      // The first is admitted alone; the second asks for a lease of 4 (4,000 held until 5 s after it, and 1 s more).
      await dying.stores[0]!.admit(admitRequest({ orgId, nowMs: t0, reservationTtlMs: 5_000 }))
      await dying.stores[0]!.admit(admitRequest({ orgId, nowMs: t0, reservationTtlMs: 5_000 }))
      dying.clients[0]!.destroy()
      await waitForRedis(client, 5_000)
      const survivor = new RedisAdmissionStore(client, { keyPrefix: dying.keyPrefix })

      expect((await survivor.snapshot(orgId, '202501'))!.heldMicros).toBe(5_000n)
      expect(await survivor.releaseExpired(orgId, t0 + 5_999)).toBe(1)
      expect((await survivor.snapshot(orgId, '202501'))!.heldMicros).toBe(4_000n)
      expect(await survivor.releaseExpired(orgId, t0 + 6_000)).toBe(1)
      expect((await survivor.snapshot(orgId, '202501'))!.heldMicros).toBe(0n)
    } finally {
      client.destroy()
      await dying.close().catch(() => {})
    }
  })

  test('ends its leases when its connection reports trouble: Redis may have restarted without them', async () => {
    const [store] = redis.stores
    const { request } = await organization(1_000_000n)
    const t0 = Date.now()
    await store!.admit(request({ nowMs: t0 }))
    await store!.admit(request({ nowMs: t0 + 1 }))
    expect(store!.leased.leases).toBeGreaterThanOrEqual(1)

    redis.clients[0]!.emit('error', new Error('connection reset'))

    expect(store!.leased.leases).toBe(0)
  })

  test('admissions wait after a rebuild until every lease granted before it has ended', async () => {
    const [holder, rebuilder] = redis.stores
    const orgId = newOrgId()
    await holder!.load(orgId, orgCounters(100_000n))
    const request = (overrides: Partial<AdmitRequest> = {}) => admitRequest({ orgId, nowMs: Date.now(), ...overrides })
    await holder!.admit(request())
    await holder!.admit(request())
    expect(holder!.leased.leases).toBeGreaterThanOrEqual(1)

    // Redis loses the organization's counters (a FLUSHDB) while the holder stays connected.
    const lost = (await redis.keys()).filter((key) => key.includes(orgId))
    await redis.clients[0]!.unlink(lost)
    expect((await rebuilder!.admit(request())).admitted).toBe(false)
    const fence = await rebuilder!.beginLoad(orgId)
    expect(await rebuilder!.finishLoad(orgId, orgCounters(100_000n), fence!, [], Date.now())).toBe(true)
    const rebuiltAt = performance.now()
    // The holder's lease still admits: nothing told it yet.
    expect((await holder!.admit(request())).admitted).toBe(true)

    const afterRebuild = await rebuilder!.admit(request({ keyId: 'key_b' }))

    expect(afterRebuild.admitted).toBe(true)
    expect(performance.now() - rebuiltAt).toBeGreaterThanOrEqual(leaseMs - 50)
  })
})

function currentMonth(): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: 'Africa/Cairo', year: 'numeric', month: '2-digit' }).formatToParts(new Date())
  return `${parts.find((p) => p.type === 'year')!.value}${parts.find((p) => p.type === 'month')!.value}`
}
