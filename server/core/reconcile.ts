import { billingMonth, rebuildCounters, type AdmissionStore, type LedgerCounters, type OrgCounters, type WatchedSnapshot } from './admission'
import type { LedgerReader, UsageRowFinder } from './ports'

/** An organization whose counters are reconciled, with the zone its months are counted in. */
export interface BillingAccount {
  orgId: string
  timeZone: string
}

/** Store minus ledger, where they differ (micro-EGP). */
export interface Drift {
  balanceMicros: bigint
  keys: Map<string, bigint>
  projects: Map<string, bigint>
}

/** What reconciling one organization found and did. */
export interface Reconciliation {
  orgId: string
  month: string
  /**
   * - `in_step`: the counters hold exactly what the ledger records;
   * - `repaired`: they had drifted, the same on two looks in a row, and were brought back;
   * - `drifted`: they had drifted and were left so: a dry run, a drift that was not the same on a
   *   second look, or counters that changed otherwise before the repair (a credit, late rows
   *   applied, another gateway's repair);
   * - `unsettled`: not measured this time: usage rows of settled requests had not reached the
   *   ledger yet, or a credit, load or rebuild changed the counters while they were looked at;
   * - `rebuilt`: the store had no counters and they were rebuilt from the ledger;
   * - `absent`: the store had no counters and `loadMissing` was off.
   */
  outcome: 'in_step' | 'repaired' | 'drifted' | 'unsettled' | 'rebuilt' | 'absent'
  drift: Drift
  releasedHolds: number
}

export interface ReconcileOptions {
  /** Bring drifted counters back to the ledger (default); off, only report. */
  repair?: boolean
  /**
   * Rebuild counters the store does not have (default). Off, they are left to the organization's
   * next request: idle organizations cost no ledger read and no memory.
   */
  loadMissing?: boolean
  /**
   * Hears of counters it rebuilt, for their follow-up (late-usage.ts): what it read, when the read
   * began, the rebuild's fence token.
   */
  loaded?: (account: BillingAccount, read: LedgerCounters, readAtMs: number, loadToken: string) => void
  /**
   * How long a settled request's usage row usually takes to reach the ledger (a gateway writes a
   * batch every second): waited once before the ledger is read, and between looks for the rows of
   * requests settled while the counters were watched. Default 2 s.
   */
  rowWaitMs?: number
  /** Looks for those rows before the organization is left `unsettled` for this time. Default 5. */
  rowLooks?: number
  /**
   * Whether a drift found was found the same before (the periodic reconciler remembers its last
   * pass): repaired at once if so, left `drifted` if not. Without it a drift is looked at again
   * after `confirmAfterMs` and repaired when that look finds it the same.
   */
  seenBefore?: (orgId: string, drift: Drift) => boolean
  /** Default 5 s. */
  confirmAfterMs?: number
  /** Organizations measured together, sharing the waits. Default 50. */
  batchSize?: number
  /** Asked between batches: true ends the work early (a gateway shutting down). */
  stopped?: () => boolean
  now?: () => number
  sleep?: (ms: number) => Promise<void>
}

type Ledger = LedgerReader & UsageRowFinder

// A watch outlives the measure of a batch by far: a batch takes the waits and two reads an organization.
const watchMs = 60_000

function noDrift(): Drift {
  return { balanceMicros: 0n, keys: new Map(), projects: new Map() }
}

function isInStep(drift: Drift): boolean {
  return drift.balanceMicros === 0n && drift.keys.size === 0 && drift.projects.size === 0
}

/** The drift as one comparable string. */
export function driftSignature(drift: Drift): string {
  const entries = (map: Map<string, bigint>) => [...map].sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, value]) => `${id}=${value}`)
  return [`balance=${drift.balanceMicros}`, ...entries(drift.keys).map((entry) => `key ${entry}`), ...entries(drift.projects).map((entry) => `project ${entry}`)].join(', ')
}

function spendDrift(store: ReadonlyMap<string, bigint>, ledger: ReadonlyMap<string, bigint>): Map<string, bigint> {
  const drift = new Map<string, bigint>()
  for (const id of new Set([...store.keys(), ...ledger.keys()])) {
    const difference = (store.get(id) ?? 0n) - (ledger.get(id) ?? 0n)
    if (difference !== 0n) drift.set(id, difference)
  }
  return drift
}

function negated(spend: Map<string, bigint>): Map<string, bigint> {
  return new Map([...spend].map(([id, amount]) => [id, -amount]))
}

/** One organization's measure in progress. */
interface Measure {
  account: BillingAccount
  month: string
  releasedHolds: number
  watch: string | null
  /** The ledger read, taken after the watch began and before the snapshot. */
  read?: OrgCounters & { snapshot?: string }
  snapshot?: WatchedSnapshot
  result?: Reconciliation
}

/**
 * Brings organizations' admission counters back to the ledger (I3), exactly even while requests
 * settle: releases expired holds, rebuilds counters the store lost, and repairs a balance or month
 * spend that drifted (open holds are kept).
 *
 * Settled requests reach the ledger a moment after the store (their usage rows are written in
 * batches, I4), so store and ledger are compared at one cut. The store records which requests it
 * settles from a moment before the ledger read on (`watchSettled`) until the snapshot taken after
 * it (`watchedSnapshot`); the ledger read is counted with the rows of those requests it did not
 * hold yet, once they are all written. Every settlement in the snapshot is then counted once: its
 * row was in the read, or it was watched (its row written a moment after its settlement). A row
 * that takes longer than the wait before the read to be written reads as drift for one look, so a
 * drift is repaired only when a second look finds it the same, and by adding the difference
 * (`adjust`), which keeps whatever settled in between, and only while nothing else changed the
 * counters since the second look (two gateways' reconcilers never repair twice).
 */
export async function reconcileAccounts(store: AdmissionStore, ledger: Ledger, accounts: readonly BillingAccount[], options: ReconcileOptions = {}): Promise<Reconciliation[]> {
  const batchSize = options.batchSize ?? 50
  const results: Reconciliation[] = []
  for (let start = 0; start < accounts.length && !options.stopped?.(); start += batchSize) {
    const batch = accounts.slice(start, start + batchSize)
    const first = await measure(store, ledger, batch, options)
    const drifted = first.filter(({ result }) => result!.outcome === 'drifted')
    if (options.repair !== false && drifted.length > 0) {
      if (options.seenBefore) {
        for (const look of drifted) if (options.seenBefore(look.account.orgId, look.result!.drift)) await repair(store, look)
      } else {
        await (options.sleep ?? Bun.sleep)(options.confirmAfterMs ?? 5_000)
        const second = await measure(store, ledger, drifted.map(({ account }) => account), { ...options, loadMissing: false })
        for (const [index, look] of drifted.entries()) {
          const again = second[index]!
          const confirmed = again.result!.outcome === 'drifted' && driftSignature(again.result!.drift) === driftSignature(look.result!.drift)
          again.result!.releasedHolds += look.releasedHolds
          look.result = again.result
          if (confirmed) await repair(store, again)
        }
      }
    }
    results.push(...first.map(({ result }) => result!))
  }
  return results
}

/** The result of a look at one organization. */
function resultOf(look: Measure, outcome: Reconciliation['outcome'], drift: Drift = noDrift()): Reconciliation {
  return { orgId: look.account.orgId, month: look.month, outcome, drift, releasedHolds: look.releasedHolds }
}

/** Adds the drift's opposite to the counters, unless they changed otherwise since the look. */
async function repair(store: AdmissionStore, look: Measure): Promise<void> {
  const result = look.result!
  const { drift } = result
  const change = { month: look.month, balanceMicros: -drift.balanceMicros, keySpend: negated(drift.keys), projectSpend: negated(drift.projects) }
  if (await store.adjust(look.account.orgId, look.snapshot!.revision, change)) result.outcome = 'repaired'
}

/** One look at a batch of organizations: each ends with its result, `drifted` when store and ledger differ. */
async function measure(store: AdmissionStore, ledger: Ledger, accounts: readonly BillingAccount[], options: ReconcileOptions): Promise<Measure[]> {
  const now = options.now ?? Date.now
  const sleep = options.sleep ?? Bun.sleep
  const rowWaitMs = options.rowWaitMs ?? 2_000
  const looks: Measure[] = []
  for (const account of accounts) {
    const nowMs = now()
    const month = billingMonth(nowMs, account.timeZone)
    const releasedHolds = await store.releaseExpired(account.orgId, nowMs)
    const look: Measure = { account, month, releasedHolds, watch: await store.watchSettled(account.orgId, nowMs, nowMs + watchMs) }
    if (look.watch === null) look.result = await rebuild(store, ledger, look, options)
    looks.push(look)
  }
  const watched = looks.filter((look) => look.watch !== null)
  if (watched.length === 0) return looks
  // The rows of requests settled before the watches began reach the ledger meanwhile.
  await sleep(rowWaitMs)
  for (const look of watched) {
    const { orgId, timeZone } = look.account
    look.read = await ledger.readCounters(orgId, look.month, timeZone)
    const snapshot = await store.watchedSnapshot(orgId, look.month, look.watch!, now())
    if (snapshot && look.read.snapshot !== undefined) look.snapshot = snapshot
    else look.result = resultOf(look, 'unsettled')
  }
  let pending = watched.filter((look) => look.snapshot)
  for (let attempt = 1; pending.length > 0; attempt++) {
    const waiting: Measure[] = []
    for (const look of pending) {
      const found = await ledger.findUsageRows(look.account.orgId, look.read!.snapshot!, look.snapshot!.settledIds, look.account.timeZone)
      if (found.missingIds.length === 0) look.result = compare(look, found.after)
      else if (attempt >= (options.rowLooks ?? 5)) look.result = resultOf(look, 'unsettled')
      else waiting.push(look)
    }
    pending = waiting
    if (pending.length > 0) await sleep(rowWaitMs)
  }
  return looks
}

/** Store minus ledger, the ledger read counted with the watched requests' rows it did not hold. */
function compare(look: Measure, after: readonly { keyId: string; projectId: string; month: string; costMicros: bigint }[]): Reconciliation {
  const read = look.read!
  const snapshot = look.snapshot!
  let balanceMicros = read.balanceMicros
  const keySpend = new Map(read.keySpend)
  const projectSpend = new Map(read.projectSpend)
  for (const row of after) {
    balanceMicros -= row.costMicros
    if (row.month !== look.month) continue
    keySpend.set(row.keyId, (keySpend.get(row.keyId) ?? 0n) + row.costMicros)
    projectSpend.set(row.projectId, (projectSpend.get(row.projectId) ?? 0n) + row.costMicros)
  }
  const drift = {
    balanceMicros: snapshot.balanceMicros - balanceMicros,
    keys: spendDrift(snapshot.keySpend, keySpend),
    projects: spendDrift(snapshot.projectSpend, projectSpend),
  }
  return resultOf(look, isInStep(drift) ? 'in_step' : 'drifted', drift)
}

/** Counters the store does not have: rebuilt from the ledger, or left absent. */
async function rebuild(store: AdmissionStore, ledger: Ledger, look: Measure, options: ReconcileOptions): Promise<Reconciliation> {
  const { orgId, timeZone } = look.account
  if (options.loadMissing === false || options.repair === false) return resultOf(look, 'absent')
  const now = options.now ?? Date.now
  const loaded = options.loaded && ((read: LedgerCounters, readAtMs: number, loadToken: string) => options.loaded!(look.account, read, readAtMs, loadToken))
  const rebuilt = await rebuildCounters(store, orgId, look.month, now, (_, __, requestIds) => ledger.readCounters(orgId, look.month, timeZone, requestIds), loaded)
  // Not rebuilt here: another gateway did it meanwhile, or a credit fenced this rebuild off.
  return resultOf(look, rebuilt ? 'rebuilt' : 'unsettled')
}
