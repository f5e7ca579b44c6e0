import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { postgresAddress } from '../support/databases'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { useRedisServer } from '../support/redis-server'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { waitFor } from '../support/wait-for'
import { BillingBooks, expectBooksBalanced, openScratchBooks, useFaultCatalog } from './billing-books'
import { chat, quickModel, request, servedIds, tally, teardown, type Answer } from './fault-scenario'

// Billing faults (DESIGN.md section 4), one file each: the database unreachable (here), a gateway
// killed mid-stream (billing-faults-gateway-kill), Redis restarted under load
// (billing-faults-redis-restart), Redis losing its data while another gateway holds usage rows
// (billing-faults-redis-loss). Whatever fails, every answer is a 200 or a clean refusal, every
// served request has exactly one usage row, and once the ledger has caught up the admission counters
// equal credits minus the ledger to the micro-EGP.

const catalog = useFaultCatalog()
// A server of the file's own: the scenario may cut it off, flush it or restart it.
const redis = useRedisServer()

describe('Postgres unreachable for 30 s', () => {
  const outageMs = 30_000
  const cleanup = teardown()
  let proxy: TcpProxy
  let gateway: RunningGateway
  let books: BillingBooks

  beforeAll(async () => {
    const scratch = await openScratchBooks(cleanup, redis.current.url())
    books = scratch.books
    proxy = startTcpProxy(postgresAddress())
    cleanup.push(() => proxy.stop())
    gateway = await startGateway({ database: 'postgres', sharedDatabaseUrl: proxy.via(scratch.databaseUrl), catalogPath: catalog.path, env: { REDIS_URL: redis.current.url() } })
    cleanup.push(() => gateway.stop())
  }, 60_000)

  afterAll(() => cleanup.run(), 30_000)

  test('warm keys are served throughout, a cold key gets a clean 503, and every served request lands in the ledger once', async () => {
    const keys = await Promise.all([gateway.createApiKey(), gateway.createApiKey(), gateway.createApiKey()])
    const [warm, cold] = [keys.slice(0, 2), keys[2]!]
    const orgs = await Promise.all(keys.map((key) => books.orgOf(key)))
    const answers: Answer[][] = [[], [], []]
    const ask = async (index: number) => {
      const answer = await chat(gateway.baseUrl, keys[index]!, request(quickModel))
      answers[index]!.push(answer)
      return answer
    }
    const warmUp = await Promise.all(warm.map((_, index) => ask(index)))

    proxy.refusing = true
    proxy.cut()
    const during: Promise<Answer>[] = []
    const outageEnds = performance.now() + outageMs
    let coldDuring: Promise<Answer> | null = null
    while (performance.now() < outageEnds) {
      during.push(ask(0), ask(1))
      if (!coldDuring && outageEnds - performance.now() < outageMs / 2) coldDuring = chat(gateway.baseUrl, cold, request(quickModel))
      // The load's pace (about 3 requests per second per key), not a wait for a condition.
      await Bun.sleep(333)
    }
    const duringOutage = await Promise.all(during)
    const coldRefused = await coldDuring!
    const refusedConnections = proxy.refused
    proxy.refusing = false
    const backAt = performance.now()
    // Served once the database answers again: at once, or when the driver's connections have
    // reconnected (a clean 503 meanwhile, retried at a client's pace).
    let coldServed = await ask(2)
    while (coldServed.status !== 200 && performance.now() - backAt < 20_000) {
      expect(coldServed).toMatchObject({ status: 503, code: 'service_unavailable' })
      await Bun.sleep(250)
      coldServed = await ask(2)
    }
    const recoveryMs = Math.round(coldServed.answeredAtMs - backAt)

    expect(warmUp.map((answer) => answer.status)).toEqual([200, 200])
    expect(tally(duringOutage)).toEqual({ '200': duringOutage.length })
    expect(coldRefused).toMatchObject({ status: 503, code: 'service_unavailable' })
    expect(refusedConnections).toBeGreaterThan(0)
    expect(coldServed.status).toBe(200)
    const expectedIds = answers.map(servedIds)
    let ledgerIds: string[][] = []
    await waitFor(
      async () => {
        ledgerIds = await Promise.all(orgs.map(async (orgId) => (await books.ledger(orgId)).requestIds))
        return ledgerIds.every((ids, index) => ids.length >= expectedIds[index]!.length)
      },
      { timeoutMs: 45_000, what: 'the usage rows written during the outage' },
    )
    expect(ledgerIds).toEqual(expectedIds)
    const reconciled = await books.reconcile()
    for (const orgId of orgs) {
      expect(reconciled.get(orgId)).toMatchObject({ outcome: 'in_step', balance_drift_micros: '0' })
      await expectBooksBalanced(books, orgId)
    }
    console.log(
      `postgres outage: ${duringOutage.length} requests during ${outageMs / 1000} s (${JSON.stringify(tally(duringOutage))}), cold key served ${recoveryMs} ms after it, ` +
        `${refusedConnections} database connections refused, usage rows ${ledgerIds.map((ids) => ids.length).join('/')} for served ${expectedIds.map((ids) => ids.length).join('/')}, ` +
        `reconcile: ${orgs.map((orgId) => `${reconciled.get(orgId)?.outcome} drift ${reconciled.get(orgId)?.balance_drift_micros}`).join(', ')}`,
    )
  }, 120_000)
})
