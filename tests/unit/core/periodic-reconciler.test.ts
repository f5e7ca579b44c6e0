import { expect, test } from 'bun:test'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { billingMonth, type LateUsage, type LedgerCounters } from '../../../server/core/admission'
import { PeriodicReconciler } from '../../../server/core/periodic-reconciler'
import type { UsageRowsFound } from '../../../server/core/ports'

const nowMs = Date.UTC(2026, 10, 15, 12)
const month = billingMonth(nowMs, 'Africa/Cairo')
const accounts = [
  { orgId: 'org_busy', timeZone: 'Africa/Cairo' },
  { orgId: 'org_idle', timeZone: 'Africa/Cairo' },
]

/**
 * A ledger whose balance the test moves. Rows of settled requests are written when the test says
 * (`write`): those written after a read are not in it, as with a snapshot.
 */
function fakeLedger(balances: Map<string, bigint>) {
  const reads: string[] = []
  let reading = 0
  /** Rows by request id, with the read they were written after. */
  const rows = new Map<string, { row: LateUsage; afterRead: number }>()
  return {
    reads,
    write(row: LateUsage) {
      rows.set(row.requestId, { row, afterRead: reading })
    },
    async readCounters(orgId: string): Promise<LedgerCounters> {
      reads.push(orgId)
      reading++
      let balanceMicros = balances.get(orgId) ?? 0n
      const keySpend = new Map<string, bigint>()
      const projectSpend = new Map<string, bigint>()
      for (const { row } of rows.values()) {
        balanceMicros -= row.costMicros
        keySpend.set(row.keyId, (keySpend.get(row.keyId) ?? 0n) + row.costMicros)
        projectSpend.set(row.projectId, (projectSpend.get(row.projectId) ?? 0n) + row.costMicros)
      }
      return { month, balanceMicros, keySpend, projectSpend, recordedIds: [], snapshot: String(reading) }
    },
    async findUsageRows(_orgId: string, snapshot: string, requestIds: readonly string[]): Promise<UsageRowsFound> {
      const found = requestIds.map((id) => rows.get(id))
      return {
        after: found.filter((entry) => entry !== undefined && entry.afterRead >= Number(snapshot)).map((entry) => entry!.row),
        missingIds: requestIds.filter((id) => !rows.has(id)),
      }
    },
  }
}

async function setup(storeBalance: bigint, ledgerBalance: bigint, sleep: (ms: number) => Promise<void> = async () => {}, claimPass?: (holdMs: number) => Promise<boolean>) {
  const store = new InProcessAdmissionStore()
  await store.load('org_busy', { month, balanceMicros: storeBalance, keySpend: new Map(), projectSpend: new Map() })
  const balances = new Map([['org_busy', ledgerBalance], ['org_idle', 5_000n]])
  const ledger = fakeLedger(balances)
  const logged: string[] = []
  const reconciler = new PeriodicReconciler(store, ledger, async () => accounts, { intervalMs: 60_000, now: () => nowMs, log: (line) => logged.push(line), sleep: (ms) => sleep(ms), claimPass })
  return { store, balances, ledger, reconciler, logged, balance: async () => (await store.snapshot('org_busy', month))!.balanceMicros }
}

/** Settles a request of org_busy that cost `costMicros`, as a gateway would before queuing its usage row. */
async function settle(store: InProcessAdmissionStore, requestId: string, costMicros: bigint) {
  await store.settle({ requestId, orgId: 'org_busy', keyId: 'key_1', projectId: 'proj_1', month, costMicros, nowMs })
  return { requestId, keyId: 'key_1', projectId: 'proj_1', month, costMicros }
}

test('a drift found on two passes in a row is repaired from the ledger, and logged', async () => {
  const { reconciler, balance, logged } = await setup(1_000n, 700n)
  const first = (await reconciler.runOnce())!
  expect(first.find((result) => result.orgId === 'org_busy')?.outcome).toBe('drifted')
  expect(await balance()).toBe(1_000n)
  const second = (await reconciler.runOnce())!
  expect(second.find((result) => result.orgId === 'org_busy')?.outcome).toBe('repaired')
  expect(await balance()).toBe(700n)
  expect(logged).toHaveLength(1)
  expect(logged[0]).toContain('org_busy')
})

test('a drift that moves between passes is left alone', async () => {
  const { reconciler, balance, balances } = await setup(1_000n, 700n)
  await reconciler.runOnce()
  balances.set('org_busy', 800n)
  await reconciler.runOnce()
  expect(await balance()).toBe(1_000n)
})

test('requests settled before the ledger read whose rows reach it only later are counted once: the counters are in step', async () => {
  let sleeps = 0
  const { reconciler, store, ledger, balance } = await setup(1_000n, 1_000n, async () => {
    sleeps++
    // Settled after the watch began: one row written before the ledger read, one after it, one
    // only after the first look for them.
    if (sleeps === 1) {
      ledger.write(await settle(store, 'req_before_read', 10n))
      pendingAfterRead.push(await settle(store, 'req_after_read', 20n))
      pendingAfterLook.push(await settle(store, 'req_after_look', 30n))
    }
    if (sleeps === 2) for (const row of pendingAfterLook) ledger.write(row)
  })
  const pendingAfterRead: LateUsage[] = []
  const pendingAfterLook: LateUsage[] = []
  const readCounters = ledger.readCounters.bind(ledger)
  ledger.readCounters = async (orgId: string) => {
    const read = await readCounters(orgId)
    for (const row of pendingAfterRead.splice(0)) ledger.write(row)
    return read
  }

  const [busy] = (await reconciler.runOnce())!

  expect(busy!.outcome).toBe('in_step')
  expect(await balance()).toBe(940n)
})

test('a repair adds the difference, keeping what settled between the look and the repair', async () => {
  const { reconciler, store, ledger, balance } = await setup(1_000n, 700n)
  await reconciler.runOnce()
  const findUsageRows = ledger.findUsageRows.bind(ledger)
  ledger.findUsageRows = async (orgId, snapshot, requestIds) => {
    // Settled after the store's snapshot, its row written at once: neither side of this look counts it.
    ledger.write(await settle(store, 'req_meanwhile', 50n))
    return findUsageRows(orgId, snapshot, requestIds)
  }

  const [busy] = (await reconciler.runOnce())!

  expect(busy!.outcome).toBe('repaired')
  expect(await balance()).toBe(650n)
})

test('organizations without counters are neither loaded nor read from the ledger', async () => {
  const { reconciler, ledger, store } = await setup(1_000n, 1_000n)
  const results = (await reconciler.runOnce())!
  expect(results.find((result) => result.orgId === 'org_idle')?.outcome).toBe('absent')
  expect(ledger.reads).not.toContain('org_idle')
  expect(await store.snapshot('org_idle', month)).toBeNull()
})

test('expired holds are released on every pass', async () => {
  const { reconciler, store } = await setup(1_000_000n, 1_000_000n)
  const admitted = await store.admit({ requestId: 'req_1', orgId: 'org_busy', keyId: 'key_1', projectId: 'proj_1', rpmLimit: 10, worstCaseMicros: 500n, keyCapMicros: null, projectCapMicros: null, nowMs: nowMs - 120_000, reservationTtlMs: 60_000, timeZone: 'Africa/Cairo' })
  expect(admitted.admitted).toBe(true)
  const [busy] = (await reconciler.runOnce())!
  expect(busy!.releasedHolds).toBe(1)
  expect((await store.snapshot('org_busy', month))!.heldMicros).toBe(0n)
})

test('a pass another instance has claimed is skipped: nothing read, nothing released; the claim holds until the next pass may come', async () => {
  const claims: number[] = []
  let granted = false
  const { reconciler, ledger, balance } = await setup(1_000n, 700n, undefined, async (holdMs) => {
    claims.push(holdMs)
    return granted
  })

  const skipped = await reconciler.runOnce()
  granted = true
  await reconciler.runOnce()
  const ran = await reconciler.runOnce()

  expect(skipped).toBeNull()
  expect(ran!.find((result) => result.orgId === 'org_busy')?.outcome).toBe('repaired')
  expect(ledger.reads.filter((orgId) => orgId === 'org_busy')).toHaveLength(2)
  expect(await balance()).toBe(700n)
  expect(claims).toEqual([48_000, 48_000, 48_000])
})
