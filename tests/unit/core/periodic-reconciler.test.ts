import { expect, test } from 'bun:test'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { billingMonth, type LedgerCounters } from '../../../server/core/admission'
import { PeriodicReconciler } from '../../../server/core/periodic-reconciler'

const nowMs = Date.UTC(2026, 10, 15, 12)
const month = billingMonth(nowMs, 'Africa/Cairo')
const accounts = [
  { orgId: 'org_busy', timeZone: 'Africa/Cairo' },
  { orgId: 'org_idle', timeZone: 'Africa/Cairo' },
]

/** A ledger whose balance the test moves; it counts reads per organization. */
function fakeLedger(balances: Map<string, bigint>) {
  const reads: string[] = []
  return {
    reads,
    async readCounters(orgId: string): Promise<LedgerCounters> {
      reads.push(orgId)
      return { month, balanceMicros: balances.get(orgId) ?? 0n, keySpend: new Map(), projectSpend: new Map(), recordedIds: [] }
    },
  }
}

async function setup(storeBalance: bigint, ledgerBalance: bigint) {
  const store = new InProcessAdmissionStore()
  await store.load('org_busy', { month, balanceMicros: storeBalance, keySpend: new Map(), projectSpend: new Map() })
  const balances = new Map([['org_busy', ledgerBalance], ['org_idle', 5_000n]])
  const ledger = fakeLedger(balances)
  const logged: string[] = []
  const reconciler = new PeriodicReconciler(store, ledger, async () => accounts, { intervalMs: 60_000, now: () => nowMs, log: (line) => logged.push(line) })
  return { store, balances, ledger, reconciler, logged, balance: async () => (await store.snapshot('org_busy', month))!.balanceMicros }
}

test('a drift found on two passes in a row is repaired from the ledger, and logged', async () => {
  const { reconciler, balance, logged } = await setup(1_000n, 700n)
  const first = await reconciler.runOnce()
  expect(first.find((result) => result.orgId === 'org_busy')?.outcome).toBe('repaired')
  expect(await balance()).toBe(1_000n)
  await reconciler.runOnce()
  expect(await balance()).toBe(700n)
  expect(logged).toHaveLength(1)
  expect(logged[0]).toContain('org_busy')
})

test('a drift that moves between passes is traffic in flight and is left alone', async () => {
  const { reconciler, balance, balances } = await setup(1_000n, 700n)
  await reconciler.runOnce()
  balances.set('org_busy', 800n)
  await reconciler.runOnce()
  expect(await balance()).toBe(1_000n)
})

test('organizations without counters are neither loaded nor read from the ledger', async () => {
  const { reconciler, ledger, store } = await setup(1_000n, 1_000n)
  const results = await reconciler.runOnce()
  expect(results.find((result) => result.orgId === 'org_idle')?.outcome).toBe('absent')
  expect(ledger.reads).not.toContain('org_idle')
  expect(await store.snapshot('org_idle', month)).toBeNull()
})

test('expired holds are released on every pass', async () => {
  const { reconciler, store } = await setup(1_000_000n, 1_000_000n)
  const admitted = await store.admit({ requestId: 'req_1', orgId: 'org_busy', keyId: 'key_1', projectId: 'proj_1', rpmLimit: 10, worstCaseMicros: 500n, keyCapMicros: null, projectCapMicros: null, nowMs: nowMs - 120_000, reservationTtlMs: 60_000, timeZone: 'Africa/Cairo' })
  expect(admitted.admitted).toBe(true)
  const [busy] = await reconciler.runOnce()
  expect(busy!.releasedHolds).toBe(1)
  expect((await store.snapshot('org_busy', month))!.heldMicros).toBe(0n)
})
