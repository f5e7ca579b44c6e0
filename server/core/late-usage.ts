import { defaultSettledRetentionMs, type AdmissionStore, type LateApplied } from './admission'
import { defaultTimeouts } from './catalog'
import type { LateUsageReader } from './ports'

/** Counters an organization's rebuild loaded from one ledger read. */
export interface LedgerLoad {
  orgId: string
  /** The month whose spends were loaded. */
  month: string
  timeZone: string
  /** The read's snapshot (`LedgerCounters.snapshot`). */
  snapshot: string
  /** When the read began, by this gateway's clock. */
  readAtMs: number
  /** The rebuild's fence token: the counters the rows are late for (`AdmissionStore.applyLate`). */
  loadToken: string
}

export interface LateUsageOptions {
  /** When, after a rebuild, the ledger is looked at again: each within the store's settled retention. */
  afterMs?: readonly number[]
  /**
   * How long before the read a request whose row comes late may have started (rows are dated by
   * their request's start): its duration plus how long its row may wait to be written. A function
   * is asked at each look (a catalog whose deadlines change). `lookbackFor` of the default total
   * deadline when absent.
   */
  lookbackMs?: number | (() => number)
  /**
   * How far after the read began another gateway's clock may date a request settled before it.
   * Requests that started later settled in the rebuilt counters (their settlement found the fence
   * or the loaded counters); 0 trusts the gateways' clocks to agree, as NTP keeps them within
   * milliseconds.
   */
  clockSkewMs?: number
  now?: () => number
  log?: (message: string) => void
}

const defaultAfterMs = [5_000, 30_000]

/** How long a usage row may wait in a gateway's queue after its request ended (batches go out every second). */
export const lateRowWaitMs = 60_000

/**
 * The lookback for requests that run up to `longestRequestMs` (`Catalog.longestRequestMs`): a
 * stream of many minutes that ended just before Redis lost the counters is dated by its start.
 */
export function lookbackFor(longestRequestMs: number): number {
  return longestRequestMs + lateRowWaitMs
}

/**
 * Closes the gap a shared store's rebuild leaves. When Redis loses an organization's counters, the
 * gateway that rebuilds them reads the ledger; requests that other gateways settled just before the
 * loss may have their usage rows still queued there (a batch is written every second, or later
 * while the database is unreachable). Those costs are in neither the read nor the rebuilt counters,
 * so the balance would come out too high by them. A few seconds after the rebuild, and again later,
 * the rows written after the read's snapshot are read and the store debits those whose requests it
 * has not settled since (`AdmissionStore.applyLate`); the ids it settled are remembered for its
 * settled retention, which is why every look happens within it. Only rows of requests that started
 * before the read began are asked for (those in flight across the rebuild among them, which the
 * store finds settled): later ones settled in the rebuilt counters. The rows are late for that
 * read only: counters rebuilt again, or repaired, since are left alone.
 */
export class LateUsageFollowUp {
  private readonly afterMs: readonly number[]
  private readonly lookbackMs: () => number
  private readonly clockSkewMs: number
  private readonly now: () => number
  private readonly log: (message: string) => void
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  private readonly passes = new Set<Promise<unknown>>()
  private stopped = false

  constructor(
    private readonly store: AdmissionStore,
    private readonly ledger: LateUsageReader,
    options: LateUsageOptions = {},
  ) {
    this.afterMs = options.afterMs ?? defaultAfterMs
    const lookbackMs = options.lookbackMs ?? lookbackFor(defaultTimeouts.totalMs)
    this.lookbackMs = typeof lookbackMs === 'function' ? lookbackMs : () => lookbackMs
    this.clockSkewMs = options.clockSkewMs ?? 0
    this.now = options.now ?? Date.now
    this.log = options.log ?? ((message) => console.error(message))
    if (Math.max(...this.afterMs) + this.clockSkewMs >= defaultSettledRetentionMs) {
      throw new RangeError('every look must come within the settled retention, or requests settled since the rebuild would be debited again')
    }
  }

  /** Looks for the load's late rows at each of `afterMs`. */
  follow(load: LedgerLoad): void {
    if (this.stopped) return
    for (const afterMs of this.afterMs) {
      const timer = setTimeout(() => {
        this.timers.delete(timer)
        const pass = this.pass(load)
          .catch((error: unknown) => this.log(`admission: looking for usage rows of ${load.orgId} that reached the ledger after its rebuild failed: ${(error as Error).message}`))
          .finally(() => this.passes.delete(pass))
        this.passes.add(pass)
      }, afterMs)
      timer.unref?.()
      this.timers.add(timer)
    }
  }

  /**
   * One look; null when the counters are no longer this load's: absent again (their next rebuild
   * reads every row), rebuilt again or repaired since (a repair counted the rows its read held,
   * the reconciler's next passes find later ones).
   */
  async pass(load: LedgerLoad): Promise<LateApplied | null> {
    const rows = await this.ledger.readUsageAfter(load.orgId, load.snapshot, load.readAtMs - this.lookbackMs(), load.readAtMs + this.clockSkewMs, load.timeZone)
    if (rows.length === 0) return { applied: 0, debitedMicros: 0n }
    const applied = await this.store.applyLate(load.orgId, load.month, rows, this.now(), load.loadToken)
    if (applied && applied.applied > 0) {
      this.log(`admission: ${load.orgId}: ${applied.applied} usage rows of requests settled before its counters were rebuilt reached the ledger after the rebuild read it; debited ${applied.debitedMicros} micro-EGP`)
    }
    return applied
  }

  /** Looks scheduled or under way. */
  get outstanding(): number {
    return this.timers.size + this.passes.size
  }

  /** Cancels the looks still to come and waits for those under way. */
  async stop(): Promise<void> {
    this.stopped = true
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
    await Promise.all(this.passes)
  }
}
