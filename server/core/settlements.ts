import type { AdmissionStore, SettleOutcome, Settlement } from './admission'

export interface SettlementsOptions {
  /** How long a settlement is tried again while the store is unreachable or rebuilding. */
  retryForMs?: number
  /** First wait before trying again; doubles per attempt up to `maxRetryMs`. */
  retryMs?: number
  maxRetryMs?: number
  log?: (message: string, error?: unknown) => void
}

/** How a settlement ended: the store's answer, or `failed` when it gave no usable one in time. */
export type SettlementEnd = SettleOutcome | 'failed'

/**
 * Settles admitted requests off the response path (I2), each until the store answers, and only
 * then lets the caller record the usage row. That order is what keeps a rebuild exact: a usage
 * row in the ledger means the store has applied its settlement or kept it, so a rebuild that reads
 * the ledger never counts a request whose settlement the store may still apply.
 *
 * A settlement the store could not take (unreachable, timed out, or a rebuild reading the ledger)
 * is sent again with backoff: the store remembers settled ids, so a repeat of one that did arrive
 * changes nothing. After `retryForMs` it is given up on and logged: the hold expires on its own,
 * the usage row still records the debit, and the reconciler brings the counters in step.
 */
export class Settlements {
  private readonly inFlight = new Set<Promise<void>>()
  private readonly retryForMs: number
  private readonly retryMs: number
  private readonly maxRetryMs: number
  private readonly log: (message: string, error?: unknown) => void

  constructor(
    private readonly store: AdmissionStore,
    options: SettlementsOptions = {},
  ) {
    this.retryForMs = options.retryForMs ?? 20_000
    this.retryMs = options.retryMs ?? 50
    this.maxRetryMs = options.maxRetryMs ?? 1_000
    this.log = options.log ?? ((message, error) => console.error(message, error ?? ''))
  }

  /** Settlements not yet answered. */
  get pending(): number {
    return this.inFlight.size
  }

  /** Settles in the background, then calls `then` with how it ended (never on the caller's stack). */
  settle(settlement: Settlement, then: (end: SettlementEnd) => void): void {
    // `attempt` never rejects, so this callback always runs and takes the settlement off the list.
    const running: Promise<void> = this.attempt(settlement).then((end) => {
      this.inFlight.delete(running)
      try {
        then(end)
      } catch (error) {
        this.log(`after settling ${settlement.requestId}`, error)
      }
    })
    this.inFlight.add(running)
  }

  /** Waits for every settlement in progress, those that start meanwhile included. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight)
  }

  private async attempt(settlement: Settlement): Promise<SettlementEnd> {
    const startedAt = performance.now()
    let wait = this.retryMs
    for (;;) {
      let failure: unknown = null
      try {
        const { outcome } = await this.store.settle(settlement)
        if (outcome !== 'loading') return outcome
      } catch (error) {
        // A settlement the store refuses as malformed would fail the same way every time.
        if (error instanceof RangeError) {
          this.log(`settling ${settlement.requestId} was refused; its hold expires on its own and its usage row keeps the debit`, error)
          return 'failed'
        }
        failure = error
      }
      if (performance.now() - startedAt + wait > this.retryForMs) {
        this.log(`settling ${settlement.requestId} failed for ${this.retryForMs} ms; its hold expires on its own and its usage row keeps the debit`, failure ?? 'a rebuild kept the counters fenced')
        return 'failed'
      }
      await Bun.sleep(wait)
      wait = Math.min(wait * 2, this.maxRetryMs)
    }
  }
}

const defaultSettlements = new WeakMap<AdmissionStore, Settlements>()

/** The process's settlements over a store, for callers that were not handed one. */
export function settlementsFor(store: AdmissionStore): Settlements {
  let settlements = defaultSettlements.get(store)
  if (!settlements) {
    settlements = new Settlements(store)
    defaultSettlements.set(store, settlements)
  }
  return settlements
}
