import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { useRedisServer } from '../support/redis-server'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { waitFor } from '../support/wait-for'
import { BillingBooks, expectBooksBalanced, openScratchBooks, useFaultCatalog } from './billing-books'
import { chat, openSlowStream, quickModel, request, servedIds, tally, teardown, worstCaseMicros } from './fault-scenario'

// Shutdown is an exit path like any other (SPEC 3): a gateway told to stop (SIGTERM) stops taking
// connections, lets the requests in flight finish, settles each, and writes their usage rows
// before it exits, so nothing it served goes unbilled or stays held: even when Redis is away for a
// moment as the last requests end, and their settlements have to be sent again.

const catalog = useFaultCatalog()
// A server of the file's own: the scenario may cut it off, flush it or restart it.
const redis = useRedisServer()

describe('a gateway stopped with SIGTERM while streams run', () => {
  const cleanup = teardown()
  let gateway: RunningGateway
  let books: BillingBooks
  let proxy: TcpProxy

  beforeAll(async () => {
    const scratch = await openScratchBooks(cleanup, redis.current.url())
    books = scratch.books
    proxy = startTcpProxy({ hostname: '127.0.0.1', port: redis.current.port })
    cleanup.push(() => proxy.stop())
    // Usage rows wait in the gateway until a batch fills or it stops: only the shutdown writes them.
    gateway = await startGateway({ database: 'postgres', sharedDatabaseUrl: scratch.databaseUrl, catalogPath: catalog.path, env: { REDIS_URL: proxy.via(redis.current.url()), USAGE_FLUSH_MS: '600000' } })
    cleanup.push(() => gateway.stop())
  }, 60_000)

  afterAll(() => cleanup.run(), 30_000)

  test('finishes the streams, settles every request and writes every usage row before it exits; the books agree', async () => {
    const apiKey = await gateway.createApiKey({ rpm: 10_000 })
    const orgId = await books.orgOf(apiKey)
    const quick = await Promise.all(Array.from({ length: 10 }, () => chat(gateway.baseUrl, apiKey, request(quickModel))))
    const streams = await Promise.all(Array.from({ length: 4 }, () => openSlowStream(gateway.baseUrl, apiKey, 3)))
    const heldAtStop = (await books.counters(orgId))!.reservations.map((reservation) => reservation.requestId).sort()

    process.kill(gateway.pid, 'SIGTERM')
    // Redis goes away while the streams finish, and comes back a second after the last one ended.
    proxy.refusing = true
    proxy.cut()
    const ends = await Promise.all(streams.map((stream) => stream.rest))
    await Bun.sleep(1_000)
    const runningWhileRedisAway = gateway.isRunning
    proxy.refusing = false
    await waitFor(() => !gateway.isRunning, { timeoutMs: 20_000, what: 'the gateway to exit' })

    const streamIds = streams.map((stream) => stream.requestId).sort()
    expect(tally(quick)).toEqual({ '200': 10 })
    expect(heldAtStop).toEqual(streamIds)
    expect(runningWhileRedisAway).toBe(true)
    for (const { text, error } of ends) {
      expect(error).toBeNull()
      expect(text).not.toContain('"error"')
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
    }
    expect(gateway.output()).toContain('SIGTERM: finishing requests in flight')
    const ledger = await books.ledger(orgId)
    expect(ledger.requestIds).toEqual([...servedIds(quick), ...streamIds].sort())
    // Every request of the fault catalog costs exactly its worst case.
    expect(ledger.debitMicros).toBe(14n * worstCaseMicros)
    await expectBooksBalanced(books, orgId)
    console.log(`SIGTERM: ${streams.length} streams finished after the signal, ${quick.length} answered before it; usage rows ${ledger.requestIds.length}, debits ${ledger.debitMicros} micro-EGP`)
  }, 60_000)
})
