import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { useRedisServer } from '../support/redis-server'
import { waitFor } from '../support/wait-for'
import { BillingBooks, expectBooksBalanced, openScratchBooks, useFaultCatalog } from './billing-books'
import { chat, egp, openSlowStream, quickModel, request, servedIds, slowStreamTotalMs, tally, teardown, worstCaseMicros } from './fault-scenario'

// A gateway that dies holds money it never settles: the hold must expire and be released (I2)
// while the organization keeps being admitted within what the hold leaves (I1).

const catalog = useFaultCatalog()
// A server of the file's own: the scenario may cut it off, flush it or restart it.
const redis = useRedisServer()

describe('a gateway killed with SIGKILL in the middle of a stream', () => {
  const marginMs = 3_000
  const cleanup = teardown()
  let doomed: RunningGateway
  let survivor: RunningGateway
  let books: BillingBooks

  beforeAll(async () => {
    const scratch = await openScratchBooks(cleanup, redis.current.url())
    books = scratch.books
    const options = { database: 'postgres' as const, sharedDatabaseUrl: scratch.databaseUrl, catalogPath: catalog.path, env: { REDIS_URL: redis.current.url(), RESERVATION_MARGIN_MS: String(marginMs) } }
    ;[doomed, survivor] = await Promise.all([startGateway(options), startGateway(options)])
    cleanup.push(() => doomed.stop())
    cleanup.push(() => survivor.stop())
  }, 60_000)

  afterAll(() => cleanup.run(), 30_000)

  test('its hold expires and is released; meanwhile the org is admitted within what the hold leaves, and the books agree', async () => {
    const burstAdmits = 5
    // The stream's hold, then room for exactly `burstAdmits` more requests (each costs its worst case).
    const balanceMicros = worstCaseMicros + BigInt(burstAdmits) * worstCaseMicros + worstCaseMicros - 1n
    const apiKey = await survivor.createApiKey({ balanceEgp: egp(balanceMicros), rpm: 10_000 })
    const orgId = await books.orgOf(apiKey)

    const streamSentAt = Date.now()
    const { requestId: streamId, rest } = await openSlowStream(doomed.baseUrl, apiKey, 4)
    const streamOpenedAt = Date.now()
    const [hold] = (await books.counters(orgId))!.reservations
    process.kill(doomed.pid, 'SIGKILL')
    await waitFor(() => !doomed.isRunning, { what: 'the gateway to die' })
    await rest
    const burst = await Promise.all(Array.from({ length: burstAdmits + 4 }, () => chat(survivor.baseUrl, apiKey, request(quickModel))))
    // The burst settles off the response path: its holds go a moment after its answers.
    let holdsAfterBurst: string[] = []
    await waitFor(async () => (holdsAfterBurst = (await books.counters(orgId))!.reservations.map((reservation) => reservation.requestId)).length <= 1, { what: 'the burst to settle' })

    expect(hold).toMatchObject({ requestId: streamId, amountMicros: worstCaseMicros })
    // The hold lives the model's total timeout plus RESERVATION_MARGIN_MS from its admission.
    expect(hold!.expiresAtMs).toBeWithin(streamSentAt + slowStreamTotalMs + marginMs, streamOpenedAt + slowStreamTotalMs + marginMs + 1)
    expect(tally(burst)).toEqual({ '200': burstAdmits, '402 insufficient_balance': 4 })
    expect(holdsAfterBurst).toEqual([streamId])
    await waitFor(async () => (await books.ledger(orgId)).requestIds.length === burstAdmits, { what: 'the usage rows of the burst' })
    await waitFor(() => Date.now() > hold!.expiresAtMs, { timeoutMs: slowStreamTotalMs + marginMs + 5_000, what: 'the hold to expire' })
    const reconciled = (await books.reconcile({ dryRun: true })).get(orgId)
    expect(reconciled).toMatchObject({ outcome: 'in_step', balance_drift_micros: '0', released_holds: 1 })
    await expectBooksBalanced(books, orgId)
    const ledger = await books.ledger(orgId)
    expect(ledger.requestIds).toEqual(servedIds(burst))
    expect(ledger.requestIds).not.toContain(streamId)
    expect((await chat(survivor.baseUrl, apiKey, request(quickModel))).status).toBe(200)
    console.log(
      `kill -9: stream ${streamId} held ${hold!.amountMicros} micro-EGP for ${hold!.expiresAtMs - streamSentAt} ms; burst meanwhile ${JSON.stringify(tally(burst))}; ` +
        `reconcile: ${reconciled?.outcome}, drift ${reconciled?.balance_drift_micros}, ${reconciled?.released_holds} hold released; balance ${ledger.creditMicros - ledger.debitMicros} = credits ${ledger.creditMicros} - ledger ${ledger.debitMicros}`,
    )
  }, 60_000)
})
