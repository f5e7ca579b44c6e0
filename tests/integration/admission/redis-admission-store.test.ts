import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { OrgKeys } from '../../../server/adapters/redis/admission-scripts'
import { RedisAdmissionStore } from '../../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis } from '../../../server/adapters/redis/client'
import { admitLoaded, type AdmitResult } from '../../../server/core/admission'
import { describeAdmissionStore } from '../../support/admission-conformance'
import { openRedisStores, type TestRedisStores } from '../../support/admission-redis'
import { flushOwnRedis, redisAddress, startRedisServer, testRedisUrl } from '../../support/redis-server'
import { closedPort, startTcpProxy } from '../../support/tcp-proxy'
import { admitRequest, ledgerCounters, midJanuaryMs, newOrgId, orgCounters, settlementOf } from '../../support/admission-requests'
import { waitFor } from '../../support/wait-for'

describeAdmissionStore('RedisAdmissionStore (two gateways on one Redis)', async () => {
  const opened = await openRedisStores(2)
  return { stores: [opened.stores[0]!, opened.stores[1]!], close: () => opened.close() }
})

async function failure(run: () => Promise<unknown>): Promise<{ error: unknown; elapsedMs: number }> {
  const startedAt = performance.now()
  try {
    await run()
  } catch (error) {
    return { error, elapsedMs: performance.now() - startedAt }
  }
  throw new Error('expected a failure')
}

function codeOf(error: unknown): string | undefined {
  return error instanceof GatewayError ? error.code : undefined
}

describe('RedisAdmissionStore on a live Redis', () => {
  let redis: TestRedisStores

  beforeAll(async () => {
    redis = await openRedisStores(2)
  })
  afterAll(async () => {
    await redis.close()
  })

  test('keeps every key of an organization under its hash tag, so each script runs on one cluster slot', async () => {
    const orgId = newOrgId()
    const [store] = redis.stores
    await store!.load(orgId, orgCounters(10_000n, { keySpend: new Map([['key_a', 1n]]), projectSpend: new Map([['proj_a', 1n]]) }))
    const request = admitRequest({ orgId })
    const admission = await store!.admit(request)
    await store!.settle(settlementOf(request, admission as { month: string }))
    await store!.admit(admitRequest({ orgId, keyId: 'key_b' }))

    const keys = (await redis.keys()).filter((key) => key.includes(orgId)).map((key) => key.slice(redis.keyPrefix.length))

    const tag = `{o:${orgId}}:`
    expect(keys.every((key) => key.startsWith(tag) && !/[{}]/.test(key.slice(tag.length)))).toBe(true)
    expect(keys.map((key) => key.slice(tag.length)).sort()).toEqual(['acct', 'done', 'k:key_a:win', 'k:key_b:win', 'spend:202501'])
  })

  /** A new organization with 10,000 uEGP loaded by the first store, its keys, and that store's client. */
  async function loadedOrg() {
    const orgId = newOrgId()
    const store = redis.stores[0]!
    await store.load(orgId, orgCounters(10_000n))
    return { orgId, store, client: redis.clients[0]!, keys: new OrgKeys(redis.keyPrefix, orgId) }
  }

  test('reads the holds to release expired ones only once the earliest expiry it knows of has come', async () => {
    const { orgId, store, client, keys } = await loadedOrg()
    await store.admit(admitRequest({ orgId, reservationTtlMs: 60_000 }))
    // A hold the account's expiry floor does not know of, as if it were planted: expired at once.
    await client.hSet(keys.account, 'h|req_planted', `0|202501|key_a|proj_a|${midJanuaryMs + 1_000}`)
    const holds = async () => Object.keys(await client.hGetAll(keys.account)).filter((field) => field.startsWith('h|')).length

    await store.admit(admitRequest({ orgId, nowMs: midJanuaryMs + 2_000 }))
    const beforeFloor = await holds()
    await store.admit(admitRequest({ orgId, nowMs: midJanuaryMs + 60_000, reservationTtlMs: 60_000 }))
    const atFloor = await holds()

    // Before: the first two admissions' holds and the planted one. At the floor the first and the
    // planted one go, and the floor becomes the earliest expiry left: the third admission's.
    expect([beforeFloor, atFloor]).toEqual([3, 2])
    expect(await client.hGet(keys.account, 'hx')).toBe(String(midJanuaryMs + 120_000))
  })

  test('releases at most its batch of expired holds a run; the rest go in the next runs', async () => {
    const own = await openRedisStores(1, { releaseBatch: 2 })
    try {
      const store = own.stores[0]!
      const orgId = newOrgId()
      await store.load(orgId, orgCounters(10_000n))
      for (let i = 0; i < 5; i++) await store.admit(admitRequest({ orgId, reservationTtlMs: 1_000 }))
      const open = async () => (await store.snapshot(orgId, '202501'))!.reservations.length

      // Each admission run releases two; releaseExpired runs until a batch comes back short.
      await store.admit(admitRequest({ orgId, nowMs: midJanuaryMs + 1_000 }))
      const afterOneRun = await open()
      await store.admit(admitRequest({ orgId, nowMs: midJanuaryMs + 1_001 }))
      const afterTwoRuns = await open()
      await store.admit(admitRequest({ orgId, reservationTtlMs: 1_000 }))
      await store.admit(admitRequest({ orgId, reservationTtlMs: 1_000 }))
      const swept = await store.releaseExpired(orgId, midJanuaryMs + 1_002)

      expect([afterOneRun, afterTwoRuns, swept, await open()]).toEqual([4, 3, 3, 2])
    } finally {
      await own.close()
    }
  })

  test('releases a hold recorded without its expiry at the next admission, as expired', async () => {
    const { orgId, store, client, keys } = await loadedOrg()
    const request = admitRequest({ orgId })
    const admission = await store.admit(request)
    // As versions before expiries lived in the holds wrote it: in a hash of its own, no expiry floor.
    await client.hDel(keys.account, [`h|${request.requestId}`, 'hx'])
    await client.hSet(keys.legacyHolds, request.requestId, `1000|202501|key_a|proj_a`)

    await store.admit(admitRequest({ orgId, keyId: 'key_b', nowMs: midJanuaryMs + 1 }))
    const settled = await store.settle(settlementOf(request, admission as { month: string }, { costMicros: 700n }))

    expect(settled.outcome).toBe('settled_unreserved')
    const taken = (await store.snapshot(orgId, '202501'))!
    expect([taken.balanceMicros, taken.heldMicros, taken.reservations.map((hold) => hold.keyId)]).toEqual([9_300n, 1_000n, ['key_b']])
  })

  test('settles a hold kept where versions before kept holds, and moves the others into the account at the next release', async () => {
    const { orgId, store, client, keys } = await loadedOrg()
    const [first, second] = [admitRequest({ orgId }), admitRequest({ orgId, keyId: 'key_b' })]
    const admissions = [await store.admit(first), await store.admit(second)] as { month: string }[]
    // The holds as the version before this layout kept them, and no expiry floor yet.
    for (const request of [first, second]) {
      const field = `h|${request.requestId}`
      await client.hSet(keys.legacyHolds, request.requestId, (await client.hGet(keys.account, field))!)
      await client.hDel(keys.account, [field, 'hx'])
    }

    const settledFirst = await store.settle(settlementOf(first, admissions[0]!, { costMicros: 400n }))
    const released = await store.releaseExpired(orgId, midJanuaryMs + 1)
    const moved = [await client.exists(keys.legacyHolds), await client.hExists(keys.account, `h|${second.requestId}`)]
    const settledSecond = await store.settle(settlementOf(second, admissions[1]!, { costMicros: 300n }))

    expect([settledFirst, settledSecond].map((result) => [result.outcome, result.releasedMicros])).toEqual([
      ['settled', 1_000n],
      ['settled', 1_000n],
    ])
    expect([released, ...moved]).toEqual([0, 0, 1])
    const taken = (await store.snapshot(orgId, '202501'))!
    expect([taken.balanceMicros, taken.heldMicros, taken.reservations]).toEqual([9_300n, 0n, []])
  })

  /** A store on its own client, and the commands that client sends from now on. */
  async function watchedStore() {
    const own = await openRedisStores(1)
    const [store, client] = [own.stores[0]!, own.clients[0]!]
    const sent: string[][] = []
    const send = client.sendCommand.bind(client)
    client.sendCommand = ((command: string[], ...rest: unknown[]) => {
      sent.push(command)
      return (send as (...args: unknown[]) => unknown)(command, ...rest)
    }) as typeof client.sendCommand
    return { store, scriptRuns: () => sent.filter((command) => command[0] === 'EVALSHA').length, close: () => own.close() }
  }

  test('admits the requests of one turn of the event loop in one script run per organization, each as if alone', async () => {
    const watched = await watchedStore()
    try {
      const { store } = watched
      const [orgA, orgB] = [newOrgId(), newOrgId()]
      await store.load(orgA, orgCounters(4_500n))
      await store.load(orgB, orgCounters(10_000n))
      const runsBefore = watched.scriptRuns()
      const repeated = admitRequest({ orgId: orgA, keyId: 'key_c' })
      const outcomes = await Promise.all(
        [
          // key_a may admit two a minute; the balance holds four worst cases.
          admitRequest({ orgId: orgA, rpmLimit: 2 }),
          admitRequest({ orgId: orgA, rpmLimit: 2 }),
          admitRequest({ orgId: orgA, rpmLimit: 2 }),
          admitRequest({ orgId: orgA, keyId: 'key_b' }),
          repeated,
          repeated,
          admitRequest({ orgId: orgA, keyId: 'key_d' }),
          admitRequest({ orgId: orgB, keyId: 'key_b' }),
        ].map((request) => store.admit(request).then(
          (result) => (result.admitted ? `admitted, ${result.remaining} left` : result.reason),
          (error: Error) => error.message,
        )),
      )

      expect(watched.scriptRuns() - runsBefore).toBe(2)
      expect(outcomes).toEqual([
        'admitted, 1 left',
        'admitted, 0 left',
        'rate_limit_exceeded',
        'admitted, 999 left',
        'admitted, 999 left',
        `request ${repeated.requestId} was admitted before`,
        'insufficient_balance',
        'admitted, 999 left',
      ])
      expect([(await store.snapshot(orgA, '202501'))!.heldMicros, (await store.snapshot(orgB, '202501'))!.heldMicros]).toEqual([4_000n, 1_000n])
    } finally {
      await watched.close()
    }
  })

  test('settles the requests of one turn of the event loop in one script run per organization, each as if alone', async () => {
    const watched = await watchedStore()
    try {
      const { store } = watched
      const [orgA, orgB] = [newOrgId(), newOrgId()]
      await store.load(orgA, orgCounters(10_000n))
      await store.load(orgB, orgCounters(10_000n))
      const first = admitRequest({ orgId: orgA })
      const second = admitRequest({ orgId: orgA, keyId: 'key_b' })
      const other = admitRequest({ orgId: orgB })
      const admitted = await Promise.all([first, second, other].map((request) => store.admit(request) as Promise<{ month: string }>))
      const runsBefore = watched.scriptRuns()

      const results = await Promise.all([
        store.settle(settlementOf(first, admitted[0]!, { costMicros: 600n })),
        // The same request again in the same run: settled once.
        store.settle(settlementOf(first, admitted[0]!, { costMicros: 600n })),
        store.settle(settlementOf(second, admitted[1]!, { costMicros: 300n })),
        store.settle(settlementOf(other, admitted[2]!, { costMicros: 200n })),
        // Never admitted here (its hold is gone): debited without a release.
        store.settle(settlementOf(admitRequest({ orgId: orgA }), admitted[0]!, { costMicros: 50n })),
      ])

      expect(watched.scriptRuns() - runsBefore).toBe(2)
      expect(results.map(({ outcome, debitedMicros, releasedMicros }) => [outcome, debitedMicros, releasedMicros])).toEqual([
        ['settled', 600n, 1_000n],
        ['already_settled', 0n, 0n],
        ['settled', 300n, 1_000n],
        ['settled', 200n, 1_000n],
        ['settled_unreserved', 50n, 0n],
      ])
      const [a, b] = [(await store.snapshot(orgA, '202501'))!, (await store.snapshot(orgB, '202501'))!]
      expect([a.balanceMicros, a.heldMicros, a.keySpend, b.balanceMicros, b.heldMicros]).toEqual([10_000n - 950n, 0n, new Map([['key_a', 650n], ['key_b', 300n]]), 9_800n, 0n])
    } finally {
      await watched.close()
    }
  })

  test('writes the admissions of a turn to Redis in that turn, not after the loop polls again', async () => {
    const own = await openRedisStores(1)
    try {
      const store = own.stores[0]!
      const orgId = newOrgId()
      await store.load(orgId, orgCounters(10_000n))
      // Each later turn of the loop is held 100 ms before it polls, long enough for Redis to answer
      // what was written before: written at the end of this turn, the reply is read in the next.
      let turn = 0
      let answeredIn = -1
      const admitted = store.admit(admitRequest({ orgId })).then((result) => {
        answeredIn = turn
        return result
      })
      await new Promise<void>((resolve) => {
        const nextTurn = () => {
          turn++
          const until = performance.now() + 100
          while (performance.now() < until) {}
          if (answeredIn >= 0 || turn >= 5) resolve()
          else setImmediate(nextTurn)
        }
        setImmediate(nextTurn)
      })

      expect((await admitted).admitted).toBe(true)
      expect(answeredIn).toBe(1)
    } finally {
      await own.close()
    }
  })

  test('a run that fails at one request writes none of its holds, debits or settled ids: a settlement is then settled by its retry', async () => {
    const orgId = newOrgId()
    const [store] = redis.stores
    const client = redis.clients[0]!
    const key = (name: string) => `${redis.keyPrefix}{o:${orgId}}:${name}`
    await store!.load(orgId, orgCounters(10_000n))

    // The second admission's window is not a sorted set: its script call fails (WRONGTYPE). The
    // first request's window entry stays (it can only refuse early); its hold is not written.
    await client.set(key('k:key_b:win'), 'not a window')
    const [first, second] = [admitRequest({ orgId }), admitRequest({ orgId, keyId: 'key_b' })]
    const admissions = await Promise.allSettled([store!.admit(first), store!.admit(second)])
    expect(admissions.map(({ status }) => status)).toEqual(['rejected', 'rejected'])
    await client.del(key('k:key_b:win'))
    let snapshot = (await store!.snapshot(orgId, '202501'))!
    expect([snapshot.heldMicros, snapshot.reservations]).toEqual([0n, []])
    expect(await client.zCard(key('k:key_a:win'))).toBe(1)
    // It expires with its window all the same.
    expect(await client.pTTL(key('k:key_a:win'))).toBeGreaterThan(0)

    // The second settlement's hold record is unreadable: the first is not settled either.
    const [third, fourth] = [admitRequest({ orgId, keyId: 'key_c' }), admitRequest({ orgId })]
    expect((await store!.admit(third)).admitted).toBe(true)
    expect((await store!.admit(fourth)).admitted).toBe(true)
    const thirdHold = (await client.hGet(key('acct'), `h|${third.requestId}`))!
    await client.hSet(key('acct'), `h|${third.requestId}`, 'unreadable')
    const settlements = await Promise.allSettled([
      store!.settle(settlementOf(fourth, { month: '202501' }, { costMicros: 600n })),
      store!.settle(settlementOf(third, { month: '202501' }, { costMicros: 300n })),
    ])
    expect(settlements.map(({ status }) => status)).toEqual(['rejected', 'rejected'])
    await client.hSet(key('acct'), `h|${third.requestId}`, thirdHold)
    snapshot = (await store!.snapshot(orgId, '202501'))!
    expect([snapshot.balanceMicros, snapshot.heldMicros, snapshot.keySpend]).toEqual([10_000n, 2_000n, new Map()])

    const retried = await store!.settle(settlementOf(fourth, { month: '202501' }, { costMicros: 600n }))
    expect([retried.outcome, retried.releasedMicros]).toEqual(['settled', 1_000n])
    expect((await store!.settle(settlementOf(fourth, { month: '202501' }, { costMicros: 600n }))).outcome).toBe('already_settled')
    snapshot = (await store!.snapshot(orgId, '202501'))!
    expect([snapshot.balanceMicros, snapshot.heldMicros, snapshot.keySpend]).toEqual([9_400n, 1_000n, new Map([['key_a', 600n]])])
  })

  test('loads its scripts again after SCRIPT FLUSH (NOSCRIPT), for many calls at once', async () => {
    // On a server of its own: SCRIPT FLUSH reaches every client of a server.
    const server = await startRedisServer()
    const own = await openRedisStores(2, { url: server.url() })
    try {
      const orgId = newOrgId()
      await own.stores[0]!.load(orgId, orgCounters(1_000_000n))
      await flushOwnRedis(server.url(), { data: false, scripts: true })

      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => own.stores[i % 2]!.admit(admitRequest({ orgId }))))

      expect(results.every((result) => result.admitted)).toBe(true)
      expect((await own.stores[1]!.snapshot(orgId, '202501'))?.heldMicros).toBe(50_000n)
    } finally {
      await own.close()
      await server.stop()
    }
  })

  test('rebuilds counters Redis lost from the ledger, and still debits a request admitted before the loss exactly once', async () => {
    const orgId = newOrgId()
    const [store] = redis.stores
    await store!.load(orgId, orgCounters(10_000n))
    const inFlight = admitRequest({ orgId, worstCaseMicros: 3_000n })
    const admission = (await store!.admit(inFlight)) as { month: string }
    const lost = (await redis.keys()).filter((key) => key.includes(`{o:${orgId}}`))
    await redis.clients[0]!.unlink(lost)
    let ledgerReads = 0
    const readLedger = async (_orgId: string, month: string) => {
      ledgerReads++
      return ledgerCounters(10_000n, { month })
    }

    const results: AdmitResult[] = [await store!.admit(admitRequest({ orgId })), await admitLoaded(store!, admitRequest({ orgId }), readLedger), await admitLoaded(store!, admitRequest({ orgId }), readLedger)]
    const settlements = [await store!.settle(settlementOf(inFlight, admission, { costMicros: 2_000n })), await store!.settle(settlementOf(inFlight, admission, { costMicros: 2_000n }))]

    expect(results.map((result) => result.admitted || result.reason)).toEqual(['not_loaded', true, true])
    expect(ledgerReads).toBe(1)
    expect(settlements.map((result) => result.outcome)).toEqual(['settled_unreserved', 'already_settled'])
    expect((await store!.snapshot(orgId, '202501'))?.balanceMicros).toBe(8_000n)
  })
})

describe('RedisAdmissionStore rebuilding after a loss', () => {
  let redis: TestRedisStores

  beforeAll(async () => {
    redis = await openRedisStores(2, { loadFenceMs: 200 })
  })
  afterAll(async () => {
    await redis.close()
  })

  test('a settlement racing the rebuild is kept, or waits, and is counted once either way; the fence and kept keys carry the hash tag', async () => {
    const orgId = newOrgId()
    const [store, other] = redis.stores as [RedisAdmissionStore, RedisAdmissionStore]
    await store.load(orgId, orgCounters(10_000n))
    const [early, late] = [admitRequest({ orgId, worstCaseMicros: 3_000n }), admitRequest({ orgId, worstCaseMicros: 3_000n })]
    const admissions = [(await store.admit(early)) as { month: string }, (await store.admit(late)) as { month: string }]
    await redis.clients[0]!.unlink((await redis.keys()).filter((key) => key.includes(`{o:${orgId}}`)))

    // `early` settles before anyone rebuilds; its usage row is written after the ledger read.
    const kept = await other.settle(settlementOf(early, admissions[0]!, { costMicros: 1_000n }))
    const fence = await store.beginLoad(orgId)
    const keys = (await redis.keys()).filter((key) => key.includes(orgId)).map((key) => key.slice(redis.keyPrefix.length))
    // `late` settles while the ledger is read: it has to wait for the load.
    const waiting = await other.settle(settlementOf(late, admissions[1]!, { costMicros: 2_000n }))
    const loaded = await store.finishLoad(orgId, orgCounters(10_000n), fence!, [], midJanuaryMs)
    const after = await other.settle(settlementOf(late, admissions[1]!, { costMicros: 2_000n }))

    expect(keys.sort()).toEqual([`{o:${orgId}}:fence`, `{o:${orgId}}:kept`])
    expect([kept.outcome, fence!.keptIds, waiting.outcome, loaded, after.outcome]).toEqual(['pending', [early.requestId], 'loading', true, 'settled_unreserved'])
    expect((await store.snapshot(orgId, '202501'))?.balanceMicros).toBe(7_000n)
    expect((await redis.keys()).filter((key) => key.includes(orgId)).some((key) => key.endsWith(':fence') || key.endsWith(':kept'))).toBe(false)
  })

  test('a fence whose rebuilder went away expires: settlements are kept again and its late load writes nothing', async () => {
    const orgId = newOrgId()
    const [store, other] = redis.stores as [RedisAdmissionStore, RedisAdmissionStore]
    const request = admitRequest({ orgId })
    const abandoned = await store.beginLoad(orgId)

    const during = await other.settle(settlementOf(request, { month: '202501' }))
    await Bun.sleep(250)
    const afterExpiry = await other.settle(settlementOf(request, { month: '202501' }))
    const late = await store.finishLoad(orgId, orgCounters(10_000n), abandoned!, [], midJanuaryMs)
    const next = await other.beginLoad(orgId)

    expect([during.outcome, afterExpiry.outcome, late]).toEqual(['loading', 'pending', false])
    expect(next!.token).not.toBe(abandoned!.token)
    expect(next!.keptIds).toEqual([request.requestId])
  })
})

describe('RedisAdmissionStore without Redis', () => {
  test('fails closed with service_unavailable at once when nothing listens', async () => {
    const client = createRedisClient(`redis://127.0.0.1:${closedPort()}`, { connectTimeoutMs: 200, log: () => {} })
    const store = new RedisAdmissionStore(client, { commandTimeoutMs: 200 })
    const orgId = newOrgId()

    try {
      const failures = [
        await failure(() => waitForRedis(client, 100)),
        await failure(() => store.loadScripts()),
        await failure(() => store.admit(admitRequest({ orgId }))),
        await failure(() => store.settle(settlementOf(admitRequest({ orgId }), { month: '202501' }))),
        await failure(() => store.load(orgId, orgCounters(1n))),
        await failure(() => store.snapshot(orgId, '202501')),
        await failure(() => store.releaseExpired(orgId, 0)),
      ]

      expect(failures.map(({ error }) => codeOf(error))).toEqual(Array(7).fill('service_unavailable'))
      expect(Math.max(...failures.map(({ elapsedMs }) => elapsedMs))).toBeLessThan(1_000)
    } finally {
      client.destroy()
    }
  })

  describe('behind a proxy that can silence or cut Redis', () => {
    let redisUrl: string
    let proxy: ReturnType<typeof startTcpProxy>
    let client: ReturnType<typeof createRedisClient>
    let store: RedisAdmissionStore
    const orgId = newOrgId()

    beforeAll(async () => {
      redisUrl = await testRedisUrl()
      proxy = startTcpProxy(redisAddress(redisUrl))
      client = createRedisClient(proxy.via(redisUrl), { connectTimeoutMs: 200, log: () => {} })
      store = new RedisAdmissionStore(client, { keyPrefix: `test:admission:proxy:${newOrgId()}:`, commandTimeoutMs: 200 })
      await waitForRedis(client, 5_000)
      await store.load(orgId, orgCounters(1_000_000n))
    })
    afterAll(async () => {
      await store.load(orgId, orgCounters(0n)).catch(() => {})
      const direct = createRedisClient(redisUrl, { log: () => {} })
      await waitForRedis(direct, 5_000)
      for await (const keys of direct.scanIterator({ MATCH: `test:admission:proxy:*{o:${orgId}}*` })) if (keys.length > 0) await direct.unlink(keys)
      direct.destroy()
      client.destroy()
      proxy.stop()
    })

    /** Admits once Redis is reachable again (the client reconnects in the background). */
    async function admitWhenRecovered(): Promise<AdmitResult> {
      let result: AdmitResult | undefined
      await waitFor(
        async () => {
          result = await store.admit(admitRequest({ orgId })).catch(() => undefined)
          return result !== undefined
        },
        { what: 'an admission after Redis came back' },
      )
      return result!
    }

    test('answers service_unavailable after the command timeout when Redis stops answering, and recovers', async () => {
      proxy.silent = true

      const { error, elapsedMs } = await failure(() => store.admit(admitRequest({ orgId })))
      proxy.cut()
      proxy.silent = false
      const recovered = await admitWhenRecovered()

      expect(codeOf(error)).toBe('service_unavailable')
      expect(elapsedMs).toBeLessThan(1_000)
      expect(recovered.admitted).toBe(true)
    })

    test('answers service_unavailable when the connection drops, and recovers', async () => {
      proxy.cut()

      const { error } = await failure(() => store.admit(admitRequest({ orgId })))
      const recovered = await admitWhenRecovered()

      expect(codeOf(error)).toBe('service_unavailable')
      expect(recovered.admitted).toBe(true)
    })
  })
})
