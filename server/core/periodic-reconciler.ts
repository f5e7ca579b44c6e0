import type { AdmissionStore } from './admission'
import type { LedgerReader } from './ports'
import { reconcileOrganization, type BillingAccount, type Reconciliation } from './reconcile'

export interface PeriodicReconcilerOptions {
  intervalMs: number
  now?: () => number
  log?: (message: string) => void
}

/** Store minus ledger for one organization, as one comparable string; '' when in step. */
function driftSignature(result: Reconciliation): string {
  if (result.outcome !== 'repaired') return ''
  const entries = (map: Map<string, bigint>) => [...map].sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, value]) => `${id}=${value}`)
  return [`balance=${result.drift.balanceMicros}`, ...entries(result.drift.keys), ...entries(result.drift.projects)].join(',')
}

/**
 * Reconciles the admission counters of every organization with the ledger while the gateway runs:
 * expired holds are released on every pass; drift is repaired only when a pass finds exactly the
 * drift the previous pass found. Usage rows reach the ledger in batches a moment after their
 * settlement, so a drift that moves between passes is traffic in flight, not an error, and
 * replacing the counters then would hand out credit that is already spent.
 */
export class PeriodicReconciler {
  private timer: ReturnType<typeof setTimeout> | null = null
  private running: Promise<void> | null = null
  private stopped = false
  /** Drift each organization showed on the last pass. */
  private readonly lastDrift = new Map<string, string>()
  private readonly now: () => number
  private readonly log: (message: string) => void

  constructor(
    private readonly store: AdmissionStore,
    private readonly ledger: LedgerReader,
    private readonly listAccounts: () => Promise<BillingAccount[]>,
    private readonly options: PeriodicReconcilerOptions,
  ) {
    this.now = options.now ?? Date.now
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

  /** One pass over every organization; returns what it found. */
  async runOnce(): Promise<Reconciliation[]> {
    const results: Reconciliation[] = []
    for (const account of await this.listAccounts()) {
      if (this.stopped) break
      const observed = await reconcileOrganization(this.store, this.ledger, account, this.now(), { repair: false, loadMissing: false })
      const signature = driftSignature(observed)
      const seenBefore = signature !== '' && this.lastDrift.get(account.orgId) === signature
      if (signature === '') this.lastDrift.delete(account.orgId)
      else this.lastDrift.set(account.orgId, signature)
      if (!seenBefore) {
        results.push(observed)
        continue
      }
      const repaired = await reconcileOrganization(this.store, this.ledger, account, this.now(), { repair: true, loadMissing: false })
      this.lastDrift.delete(account.orgId)
      this.log(`reconcile: ${account.orgId} ${repaired.month}: counters drifted from the ledger by ${driftSignature(repaired) || signature} micro-EGP; replaced from the ledger`)
      results.push(repaired)
    }
    return results
  }

  private schedule(): void {
    if (this.stopped) return
    // Jitter, so gateways started together do not reconcile in step.
    const delay = this.options.intervalMs * (0.8 + Math.random() * 0.4)
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
