import { billingMonth, rebuildCounters, type AdmissionStore, type LoadedFromLedger, type OrgCounters } from './admission'
import type { LedgerReader } from './ports'

/** An organization whose counters are reconciled, with the zone its months are counted in. */
export interface BillingAccount {
  orgId: string
  timeZone: string
}

/** What reconciling one organization found and did. */
export interface Reconciliation {
  orgId: string
  month: string
  /**
   * `rebuilt`: the store had no counters; `repaired`: they drifted from the ledger; `in_step`:
   * nothing to do; `absent`: the store had no counters and `loadMissing` was off.
   */
  outcome: 'rebuilt' | 'repaired' | 'in_step' | 'absent'
  /** Store minus ledger, where they differ (micro-EGP). */
  drift: { balanceMicros: bigint; keys: Map<string, bigint>; projects: Map<string, bigint> }
  releasedHolds: number
}

function spendDrift(store: ReadonlyMap<string, bigint>, ledger: ReadonlyMap<string, bigint>): Map<string, bigint> {
  const drift = new Map<string, bigint>()
  for (const id of new Set([...store.keys(), ...ledger.keys()])) {
    const difference = (store.get(id) ?? 0n) - (ledger.get(id) ?? 0n)
    if (difference !== 0n) drift.set(id, difference)
  }
  return drift
}

/**
 * Brings an organization's admission counters back to the ledger (I3): releases expired holds,
 * rebuilds counters the store lost, and replaces a balance or month spend that drifted (open holds
 * are kept; a rebuild applies the settlements the store kept meanwhile). A debit settled in the store but not yet written to the ledger reads as drift in the
 * customer's favour until the next pass (I4). Without `repair`, reports what it would change.
 * `loaded` hears of counters it rebuilt, for their follow-up (late-usage.ts).
 */
export async function reconcileOrganization(
  store: AdmissionStore,
  ledger: LedgerReader,
  account: BillingAccount,
  nowMs: number,
  options: { repair?: boolean; loadMissing?: boolean; loaded?: LoadedFromLedger } = {},
): Promise<Reconciliation> {
  const repair = options.repair ?? true
  const { orgId, timeZone } = account
  const month = billingMonth(nowMs, timeZone)
  const releasedHolds = await store.releaseExpired(orgId, nowMs)
  const noDrift = { balanceMicros: 0n, keys: new Map<string, bigint>(), projects: new Map<string, bigint>() }
  // Counters that are absent are loaded on an organization's next request anyway: with
  // `loadMissing` off, idle organizations cost no ledger read and no memory.
  if (options.loadMissing === false && !(await store.snapshot(orgId, month))) return { orgId, month, outcome: 'absent', drift: noDrift, releasedHolds }
  const counters: OrgCounters = await ledger.readCounters(orgId, month, timeZone)
  const snapshot = await store.snapshot(orgId, month)
  if (!snapshot) {
    if (repair) await rebuildCounters(store, orgId, month, () => nowMs, (_, __, requestIds) => ledger.readCounters(orgId, month, timeZone, requestIds), options.loaded)
    return { orgId, month, outcome: 'rebuilt', drift: noDrift, releasedHolds }
  }
  const drift = {
    balanceMicros: snapshot.balanceMicros - counters.balanceMicros,
    keys: spendDrift(snapshot.keySpend, counters.keySpend),
    projects: spendDrift(snapshot.projectSpend, counters.projectSpend),
  }
  if (drift.balanceMicros === 0n && drift.keys.size === 0 && drift.projects.size === 0) {
    return { orgId, month, outcome: 'in_step', drift, releasedHolds }
  }
  if (repair) await store.load(orgId, counters)
  return { orgId, month, outcome: 'repaired', drift, releasedHolds }
}
