import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { maxMicros } from '../../server/core/admission'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { useRedisServer } from '../support/redis-server'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { waitFor } from '../support/wait-for'
import { BillingBooks, expectBooksBalanced, openScratchBooks, useFaultCatalog } from './billing-books'
import { chat, egp, pacedModel, request, servedIds, tally, teardown, worstCaseMicros, type Answer } from './fault-scenario'

// Redis restarted without persistence while two organizations send load: it is unreachable for a
// moment, then empty and without its scripts. Admission fails closed meanwhile and rebuilds the
// counters from the ledger before admitting again (DESIGN.md section 4), so no organization spends
// past its credit (I1) and the books agree afterwards (I3).

const catalog = useFaultCatalog()
// A server of the file's own: the scenario may cut it off, flush it or restart it.
const redis = useRedisServer()

describe('Redis restarted under load', () => {
  const workersPerKey = 12
  const workerPeriodMs = 200
  const cleanup = teardown()
  let proxy: TcpProxy
  let gateway: RunningGateway
  let books: BillingBooks

  beforeAll(async () => {
    const scratch = await openScratchBooks(cleanup, redis.current.url())
    books = scratch.books
    proxy = startTcpProxy({ hostname: '127.0.0.1', port: redis.current.port })
    cleanup.push(() => proxy.stop())
    // Usage rows wait up to 2 s in the gateway: the counters rebuilt after the restart must count them anyway.
    gateway = await startGateway({ database: 'postgres', sharedDatabaseUrl: scratch.databaseUrl, catalogPath: catalog.path, env: { REDIS_URL: proxy.via(redis.current.url()), USAGE_FLUSH_MS: '2000' } })
    cleanup.push(() => gateway.stop())
  }, 60_000)

  afterAll(() => cleanup.run(), 30_000)

  /**
   * Workers that each send one request after another, at most one per `workerPeriodMs` (fast 503s
   * must not push a key past the edge guard's 100 requests per second), until `stop`.
   */
  function startLoad(apiKey: string): { answers: Answer[]; waitingSince(ms: number): boolean; stop(): Promise<void> } {
    const answers: Answer[] = []
    // When each worker sent the request it waits for, or null between requests.
    const sentAt: Array<number | null> = Array(workersPerKey).fill(null)
    let stopped = false
    const workers = sentAt.map(async (_, worker) => {
      while (!stopped) {
        sentAt[worker] = performance.now()
        const answer = await chat(gateway.baseUrl, apiKey, request(pacedModel))
        sentAt[worker] = null
        answers.push(answer)
        await Bun.sleep(Math.max(0, answer.sentAtMs + workerPeriodMs - performance.now()))
      }
    })
    return {
      answers,
      /** Whether a request sent before `ms` has not been answered yet. */
      waitingSince: (ms) => sentAt.some((at) => at !== null && at < ms),
      async stop() {
        stopped = true
        await Promise.all(workers)
      },
    }
  }

  /** Keeps the lowest settled and available balance the store showed, read straight from Redis, until stopped. */
  function watchBalance(orgId: string): { lowest: { balanceMicros: bigint; availableMicros: bigint }; stop(): Promise<void> } {
    const lowest = { balanceMicros: maxMicros, availableMicros: maxMicros }
    let stopped = false
    const watching = (async () => {
      while (!stopped) {
        const counters = await books.counters(orgId).catch(() => null)
        if (counters) {
          if (counters.balanceMicros < lowest.balanceMicros) lowest.balanceMicros = counters.balanceMicros
          if (counters.balanceMicros - counters.heldMicros < lowest.availableMicros) lowest.availableMicros = counters.balanceMicros - counters.heldMicros
        }
        await Bun.sleep(5)
      }
    })()
    return {
      lowest,
      async stop() {
        stopped = true
        await watching
      },
    }
  }

  test('no 500s, 503 only while Redis is away, counters rebuilt before admitting, no balance below zero, books equal after reconcile', async () => {
    // One organization with plenty of credit, one whose credit runs out after the restart.
    const tightMicros = 150n * worstCaseMicros
    const keys = await Promise.all([gateway.createApiKey({ rpm: 100_000 }), gateway.createApiKey({ balanceEgp: egp(tightMicros), rpm: 100_000 })])
    const orgs = await Promise.all(keys.map((key) => books.orgOf(key)))
    const [ample, tight] = keys.map((key) => startLoad(key)) as [ReturnType<typeof startLoad>, ReturnType<typeof startLoad>]
    const watches = orgs.map((orgId) => watchBalance(orgId))
    const served = (answers: Answer[], after = 0) => answers.filter((answer) => answer.status === 200 && answer.sentAtMs >= after).length

    await waitFor(() => served(ample.answers) >= 30 && served(tight.answers) >= 30, { timeoutMs: 20_000, what: 'the load to run' })
    proxy.refusing = true
    proxy.cut()
    const cutAt = performance.now()
    // A restart without persistence: the data and the loaded scripts are gone (NOSCRIPT next time).
    await redis.current.restart()
    // Redis comes back as soon as the gateway has refused a request of each organization, while
    // requests admitted before the cut are still running: they settle around the rebuild (kept
    // while the counters are absent, made to wait while the ledger is read, or applied after the
    // load), each once.
    const inFlightAtCut = () => ample.waitingSince(cutAt) || tight.waitingSince(cutAt)
    const refusedSinceCut = (answers: Answer[]) => answers.some((answer) => answer.status === 503 && answer.sentAtMs >= cutAt)
    await waitFor(() => refusedSinceCut(ample.answers) && refusedSinceCut(tight.answers), { what: 'a 503 for each organization while Redis is away' })
    const outlivedOutage = inFlightAtCut()
    proxy.refusing = false
    const backAt = performance.now()
    await waitFor(() => served(ample.answers, backAt) >= 30, { timeoutMs: 20_000, what: 'the load to be served again' })
    await waitFor(() => tight.answers.some((answer) => answer.status === 402), { timeoutMs: 20_000, what: 'the tight organization to run out of credit' })
    await Promise.all([ample.stop(), tight.stop()])
    await Promise.all(watches.map((watch) => watch.stop()))

    // Once the gateway served again, a 503 would mean a request was admitted on unloaded counters or refused needlessly.
    const recoveredAt = Math.min(...[...ample.answers, ...tight.answers].filter((answer) => answer.status === 200 && answer.sentAtMs >= backAt).map((answer) => answer.answeredAtMs))
    const lateRefusals = [...ample.answers, ...tight.answers].filter((answer) => answer.status === 503 && answer.sentAtMs >= recoveredAt)
    expect(Object.keys(tally(ample.answers)).sort()).toEqual(['200', '503 service_unavailable'])
    expect(Object.keys(tally(tight.answers)).filter((label) => !['200', '503 service_unavailable', '402 insufficient_balance', '402 quota_exceeded'].includes(label))).toEqual([])
    expect(lateRefusals).toEqual([])
    expect(served(tight.answers)).toBe(Number(tightMicros / worstCaseMicros))
    expect(tight.answers.find((answer) => answer.status === 402)!.sentAtMs).toBeGreaterThan(backAt)
    const expectedIds = [servedIds(ample.answers), servedIds(tight.answers)]
    let ledgerIds: string[][] = []
    await waitFor(
      async () => {
        ledgerIds = await Promise.all(orgs.map(async (orgId) => (await books.ledger(orgId)).requestIds))
        return ledgerIds.every((ids, index) => ids.length >= expectedIds[index]!.length)
      },
      { what: 'the usage rows of the load' },
    )
    expect(ledgerIds).toEqual(expectedIds)
    const reconciled = await books.reconcile()
    const ledgers = await Promise.all(orgs.map((orgId) => books.ledger(orgId)))
    for (const [index, orgId] of orgs.entries()) {
      // Every settlement reached the rebuilt counters exactly once: nothing for the reconciler to repair.
      expect(reconciled.get(orgId)!.balance_drift_micros).toBe('0')
      expect(watches[index]!.lowest.balanceMicros).toBeGreaterThanOrEqual(0n)
      expect(watches[index]!.lowest.availableMicros).toBeGreaterThanOrEqual(0n)
      expect(ledgers[index]!.creditMicros - ledgers[index]!.debitMicros).toBeGreaterThanOrEqual(0n)
      await expectBooksBalanced(books, orgId)
    }
    console.log(
      `redis restart: requests in flight when Redis came back: ${outlivedOutage}; ample ${JSON.stringify(tally(ample.answers))}, tight ${JSON.stringify(tally(tight.answers))}; usage rows ${ledgerIds.map((ids) => ids.length).join('/')}; ` +
        `reconcile: ${orgs.map((orgId) => `${reconciled.get(orgId)?.outcome} drift ${reconciled.get(orgId)?.balance_drift_micros}`).join(', ')}; ` +
        `lowest store balance ${watches.map((watch) => `${watch.lowest.balanceMicros} (available ${watch.lowest.availableMicros})`).join(', ')}; ledger balances ${ledgers.map((ledger) => ledger.creditMicros - ledger.debitMicros).join(', ')}`,
    )
  }, 90_000)
})
