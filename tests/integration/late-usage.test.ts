import { afterAll, beforeAll, expect, test } from 'bun:test'
import { admitLoaded, billingMonth, type AdmitRequest, type LedgerCounters } from '../../server/core/admission'
import { LateUsageFollowUp, type LedgerLoad } from '../../server/core/late-usage'
import { reconcileAccounts } from '../../server/core/reconcile'
import type { UsageEvent } from '../../server/core/ports'
import { admitRequest } from '../support/admission-requests'
import { openRedisStores, type TestRedisStores } from '../support/admission-redis'
import { describeEachDatabase } from '../support/databases'
import { usageEvent } from '../support/usage-events'
import { waitFor } from '../support/wait-for'

// Two gateways share Redis and the ledger. Redis loses an organization's counters while gateway B
// still holds the usage row of a request it settled just before; gateway A rebuilds the counters
// from a ledger that lacks that row. The follow-up debits it once the row lands.
describeEachDatabase('the follow-up of a rebuild after Redis lost the counters', (context) => {
  let redis: TestRedisStores
  const timeZone = 'Africa/Cairo'

  beforeAll(async () => {
    redis = await openRedisStores(2)
  })
  afterAll(async () => {
    await redis?.close()
  })

  /** `startedAgoMs`: how long before the loss B's queued request started (a long stream ends just before it). */
  async function scenario(startedAgoMs = 1_000) {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000_000n })
    const orgId = tenant.organizationId
    const [gatewayA, gatewayB] = redis.stores as [typeof redis.stores[0], typeof redis.stores[0]]
    const loads: LedgerLoad[] = []
    const readLedger = (_: string, month: string, requestIds: readonly string[]) => db.ledger.readCounters(orgId, month, timeZone, requestIds)
    const noteLoad = (read: LedgerCounters, readAtMs: number, loadToken: string) => loads.push({ orgId, month: read.month, timeZone, snapshot: read.snapshot!, readAtMs, loadToken })
    const request = (overrides: Partial<AdmitRequest> = {}) => admitRequest({ orgId, nowMs: Date.now(), timeZone, worstCaseMicros: 5_000n, ...overrides })
    const served = async (on: typeof gatewayA, admit: AdmitRequest, costMicros: bigint): Promise<UsageEvent> => {
      const admitted = await admitLoaded(on, admit, readLedger, { loaded: noteLoad })
      if (!admitted.admitted) throw new Error(`not admitted: ${admitted.reason}`)
      const settled = await on.settle({ requestId: admit.requestId, orgId, keyId: admit.keyId, projectId: admit.projectId, month: admitted.month, costMicros, nowMs: Date.now() })
      expect(settled.outcome).toBe('settled')
      // A usage row is dated by its request's start.
      return usageEvent({ orgId, requestId: admit.requestId, keyId: admit.keyId, projectId: admit.projectId, costMicros, createdAt: new Date(admit.nowMs) })
    }

    // Gateway B serves a request that started `startedAgoMs` ago; its usage row is still queued
    // when Redis loses the counters.
    const queuedOnB = await served(gatewayB, request({ nowMs: Date.now() - startedAgoMs, reservationTtlMs: startedAgoMs + 60_000 }), 1_200n)
    const lost = await redis.keys()
    await redis.clients[0]!.unlink(lost.filter((key) => key.includes(`{o:${orgId}}`)))
    // Gateway A's next request rebuilds the counters from a ledger without that row.
    const writtenByA = await served(gatewayA, request({ keyId: 'key_b' }), 700n)
    await db.usage.insertUsageEvents([queuedOnB, writtenByA])
    // A request settled after the rebuild, its row in the ledger: in the counters already.
    await db.usage.insertUsageEvents([await served(gatewayB, request(), 300n)])

    const account = { orgId, timeZone }
    const drift = async () => (await reconcileAccounts(gatewayA, db.ledger, [account], { repair: false, loadMissing: false, rowWaitMs: 0 }))[0]!.drift
    // The first load is B's, for the organization's first request; the second is A's, after the loss.
    expect(loads).toHaveLength(2)
    return { orgId, gatewayA, beforeLoss: loads[0]!, rebuilt: loads[1]!, drift }
  }

  test('debits the row that reached the ledger after the read, once, and leaves the counters in step with the ledger', async () => {
    const { orgId, gatewayA, beforeLoss, rebuilt, drift } = await scenario()
    const followUp = new LateUsageFollowUp(gatewayA, context.current.db.ledger, { afterMs: [], log: () => {} })

    const before = await drift()
    // A look for the load before the loss, run after the rebuild (over the same rows): the rebuilt
    // counters are not that load's, and are left alone.
    const stale = await followUp.pass({ ...rebuilt, loadToken: beforeLoss.loadToken })
    const first = await followUp.pass(rebuilt)
    const second = await followUp.pass(rebuilt)

    // Without the follow-up the balance is 1,200 too high, and key_a's spend 1,200 too low.
    expect(before.balanceMicros).toBe(1_200n)
    expect(stale).toBeNull()
    expect(first).toEqual({ applied: 1, debitedMicros: 1_200n })
    expect(second).toEqual({ applied: 0, debitedMicros: 0n })
    expect(await drift()).toEqual({ balanceMicros: 0n, keys: new Map(), projects: new Map() })
    const snapshot = await gatewayA.snapshot(orgId, billingMonth(Date.now(), timeZone))
    expect(snapshot!.balanceMicros).toBe(1_000_000n - 1_200n - 700n - 300n)
  })

  test("finds the row of a stream that ran for minutes, dated by its start, within the default total deadline's lookback", async () => {
    const { rebuilt, gatewayA, drift } = await scenario(5 * 60_000)
    const ledger = context.current.db.ledger

    // Looking back a minute, as if requests were short, misses it.
    const tooShort = await new LateUsageFollowUp(gatewayA, ledger, { afterMs: [], lookbackMs: 60_000, log: () => {} }).pass(rebuilt)
    const found = await new LateUsageFollowUp(gatewayA, ledger, { afterMs: [], log: () => {} }).pass(rebuilt)

    expect(tooShort).toEqual({ applied: 0, debitedMicros: 0n })
    expect(found).toEqual({ applied: 1, debitedMicros: 1_200n })
    expect(await drift()).toEqual({ balanceMicros: 0n, keys: new Map(), projects: new Map() })
  })

  test('follow() looks again on its own after each delay', async () => {
    const { gatewayA, rebuilt, drift } = await scenario()
    const logged: string[] = []
    const followUp = new LateUsageFollowUp(gatewayA, context.current.db.ledger, { afterMs: [1, 20], log: (message) => logged.push(message) })

    followUp.follow(rebuilt)
    await waitFor(() => followUp.outstanding === 0, { what: 'both looks' })

    // The second look found nothing left to debit.
    expect(logged).toEqual([expect.stringContaining('1 usage rows of requests settled before its counters were rebuilt')])
    expect((await drift()).balanceMicros).toBe(0n)
  })
})
