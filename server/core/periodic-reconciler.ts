import type { AdmissionStore } from './admission'
import type { LedgerReader, UsageRowFinder } from './ports'
import { driftSignature, reconcileAccounts, type BillingAccount, type Reconciliation, type ReconcileOptions } from './reconcile'

export interface PeriodicReconcilerOptions extends Pick<ReconcileOptions, 'rowWaitMs' | 'rowLooks' | 'batchSize' | 'sleep'> {
  intervalMs: number
  /**
   * Asked before each pass, with how long the claim should hold: false when another instance
   * sharing the store has the pass (`redisPassLease`). Absent: every pass runs (one process).
   */
  claimPass?: (holdMs: number) => Promise<boolean>
  now?: () => number
  log?: (message: string) => void
}

// Passes come every 0.8 to 1.2 intervals.
const minimumDelay = 0.8

/**
 * Reconciles the admission counters of every organization with the ledger while the gateway runs
 * (`reconcileAccounts`): expired holds are released on every pass; a drift is repaired when the
 * pass before found it the same (a usage row that took long to reach the ledger reads as drift on
 * one pass only). Organizations without counters are left to their next request. Instances that
 * share a store take turns (`claimPass`), so the ledger is read once per interval, not once per
 * instance, and their looks do not end each other's watches.
 */
export class PeriodicReconciler {
  private timer: ReturnType<typeof setTimeout> | null = null
  private running: Promise<void> | null = null
  private stopped = false
  /** Drift each organization showed on the last pass. */
  private readonly lastDrift = new Map<string, string>()
  private readonly log: (message: string) => void

  constructor(
    private readonly store: AdmissionStore,
    private readonly ledger: LedgerReader & UsageRowFinder,
    private readonly listAccounts: () => Promise<BillingAccount[]>,
    private readonly options: PeriodicReconcilerOptions,
  ) {
    this.log = options.log ?? ((message) => console.error(message))
  }

  start(): void {
    this.schedule()
  }

  /** Waits for a pass in progress and stops scheduling more. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.running
  }

  /** One pass over every organization; returns what it found, or null when another instance has the pass. */
  async runOnce(): Promise<Reconciliation[] | null> {
    // Held for the shortest wait between two passes: one instance in the fleet runs each.
    if (this.options.claimPass && !(await this.options.claimPass(Math.floor(this.options.intervalMs * minimumDelay)))) return null
    const results = await reconcileAccounts(this.store, this.ledger, await this.listAccounts(), {
      ...this.options,
      loadMissing: false,
      stopped: () => this.stopped,
      seenBefore: (orgId, drift) => this.lastDrift.get(orgId) === driftSignature(drift),
    })
    this.lastDrift.clear()
    for (const result of results) {
      if (result.outcome === 'drifted') this.lastDrift.set(result.orgId, driftSignature(result.drift))
      if (result.outcome === 'repaired') this.log(`reconcile: ${result.orgId} ${result.month}: counters drifted from the ledger by ${driftSignature(result.drift)} micro-EGP; repaired`)
    }
    return results
  }

  private schedule(): void {
    if (this.stopped) return
    // Jitter, so gateways started together do not reconcile in step.
    const delay = this.options.intervalMs * (minimumDelay + Math.random() * 0.4)
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .then(() => {}, (error: unknown) => this.log(`reconcile pass failed: ${(error as Error).message}`))
        .finally(() => {
          this.running = null
          this.schedule()
        })
    }, delay)
    this.timer.unref?.()
  }
}
