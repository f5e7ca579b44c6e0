import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { admitLoaded, type AdmissionStore, type AdmitRequest, type LedgerCounters } from '../../../server/core/admission'
import { Settlements, type SettlementEnd } from '../../../server/core/settlements'
import { openRedisStores, type TestRedisStores } from '../../support/admission-redis'
import { admitRequest, midJanuaryMs, newOrgId, orgCounters, settlementOf } from '../../support/admission-requests'

// Requests admitted before a store lost an organization's counters (Redis restarted empty) settle
// while another request rebuilds them from the ledger: before the rebuild, while it reads the
// ledger, or after it loaded. Usage rows reach the ledger in batches, some before the read and
// some after. Whatever the order, every settlement must count exactly once (I3).

const credits = 1_000_000n
const nowMs = midJanuaryMs + 1_000

/** A ledger of usage rows: queued rows are invisible to reads until flushed, as with the usage recorder. */
class FakeLedger {
  readonly rows = new Map<string, bigint>()
  private readonly queued = new Map<string, bigint>()
  duringRead: () => Promise<void> = async () => {}

  queue(requestId: string, costMicros: bigint): void {
    this.queued.set(requestId, costMicros)
  }

  flush(): void {
    for (const [requestId, cost] of this.queued) this.rows.set(requestId, cost)
    this.queued.clear()
  }

  /** Reads in one step after `duringRead`, as one database snapshot would. */
  async read(month: string, requestIds: readonly string[]): Promise<LedgerCounters> {
    await this.duringRead()
    let spent = 0n
    for (const cost of this.rows.values()) spent += cost
    // Every request of these tests is on key_a.
    return { ...orgCounters(credits - spent, { month, keySpend: new Map([['key_a', spent]]) }), recordedIds: requestIds.filter((id) => this.rows.has(id)) }
  }

  get total(): bigint {
    let total = 0n
    for (const cost of [...this.rows.values(), ...this.queued.values()]) total += cost
    return total
  }
}

function describeRace(name: string, open: () => Promise<{ stores: [AdmissionStore, AdmissionStore]; close(): Promise<void> }>): void {
  describe(`${name}: settlements racing a rebuild`, () => {
    let opened: Awaited<ReturnType<typeof open>>

    beforeAll(async () => {
      opened = await open()
    })
    afterAll(() => opened.close())

    test('each counts exactly once, whether it comes before, during or after the ledger read, and whenever its row is written', async () => {
      const [store, other] = opened.stores
      const orgId = newOrgId()
      const ledger = new FakeLedger()
      const settlements = new Settlements(other, { retryMs: 2, maxRetryMs: 5, log: () => {} })
      const ends: SettlementEnd[] = []
      const settle = (request: AdmitRequest, costMicros: bigint) =>
        new Promise<void>((resolve) =>
          settlements.settle(settlementOf(request, { month: '202501' }, { costMicros, nowMs }), (end) => {
            ends.push(end)
            ledger.queue(request.requestId, costMicros)
            resolve()
          }),
        )
      const [rowBeforeRead, rowAfterRead, duringRead, afterLoad] = Array.from({ length: 4 }, () => admitRequest({ orgId }))

      // Kept while the counters are absent: one row reaches the ledger before the read, one after.
      await settle(rowBeforeRead!, 1_000n)
      ledger.flush()
      await settle(rowAfterRead!, 20_000n)
      const settlingDuringRead: Promise<void>[] = []
      ledger.duringRead = async () => {
        settlingDuringRead.push(settle(duringRead!, 300_000n))
        await Bun.sleep(20)
      }
      const admitted = await admitLoaded(store, admitRequest({ orgId, worstCaseMicros: 5n, nowMs }), (_, month, requestIds) => ledger.read(month, requestIds), { now: () => nowMs })
      await settle(afterLoad!, 4_000n)
      await Promise.all(settlingDuringRead)
      await settlements.drain()
      ledger.flush()

      expect(admitted.admitted).toBe(true)
      expect(ends.sort()).toEqual(['pending', 'pending', 'settled_unreserved', 'settled_unreserved'])
      const taken = await store.snapshot(orgId, '202501')
      expect(taken!.balanceMicros).toBe(credits - ledger.total)
      expect(taken!.keySpend.get('key_a')).toBe(ledger.total)
    })
  })
}

describeRace('InProcessAdmissionStore', async () => {
  const store = new InProcessAdmissionStore()
  return { stores: [store, store], close: async () => {} }
})

describeRace('RedisAdmissionStore', async () => {
  const redis: TestRedisStores = await openRedisStores(2)
  return { stores: [redis.stores[0]!, redis.stores[1]!], close: () => redis.close() }
})
