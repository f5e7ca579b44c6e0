import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { postgresAddress } from '../support/databases'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { flushOwnRedis, useRedisServer } from '../support/redis-server'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { waitFor } from '../support/wait-for'
import { BillingBooks, expectBooksBalanced, openScratchBooks, useFaultCatalog } from './billing-books'
import { chat, quickModel, request, servedIds, tally, teardown, worstCaseMicros, type Answer } from './fault-scenario'

// Two gateways on one Redis and one Postgres. Gateway B's usage rows cannot reach the database for
// a moment, so the requests it serves are settled in Redis and their rows wait in B. Redis then
// loses its data, and gateway A rebuilds the organization's counters from a ledger without those
// rows. Once B's rows land, A's follow-up of its rebuild debits them (DESIGN.md I3): the books
// agree without a reconcile.

const catalog = useFaultCatalog()
// A server of the file's own: the scenario may cut it off, flush it or restart it.
const redis = useRedisServer()

describe('Redis loses its data while another gateway still holds usage rows', () => {
  const cleanup = teardown()
  let databaseProxy: TcpProxy
  let gatewayA: RunningGateway
  let gatewayB: RunningGateway
  let books: BillingBooks

  beforeAll(async () => {
    const scratch = await openScratchBooks(cleanup, redis.current.url())
    books = scratch.books
    databaseProxy = startTcpProxy(postgresAddress())
    cleanup.push(() => databaseProxy.stop())
    const env = { REDIS_URL: redis.current.url() }
    gatewayA = await startGateway({ database: 'postgres', sharedDatabaseUrl: scratch.databaseUrl, catalogPath: catalog.path, env })
    cleanup.push(() => gatewayA.stop())
    gatewayB = await startGateway({ database: 'postgres', sharedDatabaseUrl: databaseProxy.via(scratch.databaseUrl), catalogPath: catalog.path, env })
    cleanup.push(() => gatewayB.stop())
  }, 60_000)

  afterAll(() => cleanup.run(), 30_000)

  test("the rebuilding gateway debits the rows that reach the ledger after its read, once, and the books agree", async () => {
    const apiKey = await gatewayA.createApiKey({ rpm: 100_000 })
    const orgId = await books.orgOf(apiKey)
    const answers: Answer[] = []
    const ask = async (gateway: RunningGateway) => {
      const answer = await chat(gateway.baseUrl, apiKey, request(quickModel))
      answers.push(answer)
      return answer
    }
    // Both gateways know the key, and the counters are loaded.
    await ask(gatewayA)
    await ask(gatewayB)
    await waitFor(async () => (await books.ledger(orgId)).requestIds.length === 2, { what: 'the first usage rows' })

    databaseProxy.refusing = true
    databaseProxy.cut()
    const heldByB = await Promise.all(Array.from({ length: 8 }, () => ask(gatewayB)))
    await flushOwnRedis(redis.current.url())
    const rebuiltByA = await ask(gatewayA)
    databaseProxy.refusing = false

    expect(tally(answers)).toEqual({ '200': answers.length })
    expect(heldByB).toHaveLength(8)
    expect(rebuiltByA.status).toBe(200)
    await waitFor(async () => (await books.ledger(orgId)).requestIds.length === answers.length, { timeoutMs: 30_000, what: "gateway B's usage rows" })
    expect((await books.ledger(orgId)).requestIds).toEqual(servedIds(answers))
    const followUp = await gatewayA.waitForOutput(/(\d+) usage rows of requests settled before its counters were rebuilt.*debited (\d+) micro-EGP/, 40_000)

    // The quick model costs exactly its worst case.
    expect(followUp.slice(1)).toEqual(['8', String(8n * worstCaseMicros)])
    await expectBooksBalanced(books, orgId)
    const reconciled = await books.reconcile({ dryRun: true })
    expect(reconciled.get(orgId)).toMatchObject({ outcome: 'in_step', balance_drift_micros: '0' })
  }, 90_000)
})
