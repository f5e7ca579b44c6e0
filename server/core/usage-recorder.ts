import type { UsageEvent, UsageRepository, UsageSink } from './ports'

// A batch costs the database about a millisecond beyond its rows (the transaction, the COPY), and
// an update of every rollup row it touches (a key's model in a quarter-hour, hour and day, however
// many of its rows the batch holds), so small batches cost more a row. With 1,000 keys, batches of
// about 10,700 rows took PGlite's worker 29 us a row (24 of its thread's CPU) at 5a58f1b, and batches
// of 20,000 (USAGE_FLUSH_MS=3000) were not clearly cheaper a row: the rows themselves cost most.
// At 20,000 requests a second a batch goes out each second.
const defaultBatchSize = 20_000
// About 200 MB of events: 25 s of 20,000 requests a second, 8 minutes of 1,000.
const defaultMaxPending = 500_000

export interface UsageRecorderOptions {
  /** Time between flushes of whatever is queued. */
  flushMs: number
  /** Queued events that trigger a flush without waiting for the timer; also the rows per insert. */
  batchSize?: number
  /** First retry delay after a failed write; doubles per failure up to `maxRetryMs`. */
  retryMs?: number
  maxRetryMs?: number
  /** How long `close()` keeps trying to write what is left. */
  closeTimeoutMs?: number
  /** Queued events at which the recorder is `full` (new requests are refused) until half are written. */
  maxPending?: number
  log?: (message: string) => void
}

/**
 * Batches usage events from the hot path into multi-row writes. `record()` only queues. One write
 * runs at a time; a failed write keeps its events and is retried with capped exponential backoff,
 * so events are never dropped while the process lives (the repository ignores replayed request
 * ids, so a write that failed after committing is harmless to repeat).
 */
export class UsageRecorder implements UsageSink {
  private readonly queue: UsageEvent[] = []
  private readonly batchSize: number
  private readonly retryMs: number
  private readonly maxRetryMs: number
  private readonly closeTimeoutMs: number
  private readonly log: (message: string) => void
  private readonly ticker: ReturnType<typeof setInterval>
  private writing: Promise<void> | null = null
  private retryTimer: ReturnType<typeof setTimeout> | null = null
  private pendingKick = false
  private failures = 0
  private lastError: unknown = null
  private closed = false
  private readonly maxPending: number
  private refusing = false

  constructor(
    private readonly repository: UsageRepository,
    options: UsageRecorderOptions,
  ) {
    this.batchSize = options.batchSize ?? defaultBatchSize
    this.retryMs = options.retryMs ?? 250
    this.maxRetryMs = options.maxRetryMs ?? 30_000
    this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000
    this.maxPending = options.maxPending ?? defaultMaxPending
    this.log = options.log ?? ((message) => console.error(message))
    this.ticker = setInterval(() => this.startWriting(), options.flushMs)
    this.ticker.unref()
  }

  /** Events queued and not yet written. */
  get pending(): number {
    return this.queue.length
  }

  /**
   * When the oldest event still queued was made (its request's end, Unix milliseconds), or null
   * when none waits: how far the ledger is behind.
   */
  get oldestPendingAtMs(): number | null {
    const oldest = this.queue[0]
    return oldest === undefined ? null : oldest.createdAt.getTime() + oldest.latencyMs
  }

  /**
   * Whether new requests should be refused: from `maxPending` queued events until half of them
   * are written (the requests still running add theirs meanwhile).
   */
  get full(): boolean {
    return this.refusing
  }

  record(event: UsageEvent): void {
    this.queue.push(event)
    if (!this.refusing && this.queue.length >= this.maxPending) {
      this.refusing = true
      this.log(`usage recorder: ${this.queue.length} usage events wait to be written; refusing new requests with 503 until half are`)
    }
    // A full batch (or any event after close) is written soon, but never on the caller's stack.
    if ((this.queue.length >= this.batchSize || this.closed) && !this.pendingKick) {
      this.pendingKick = true
      setImmediate(() => {
        this.pendingKick = false
        this.startWriting()
      })
    }
  }

  /**
   * Writes everything queued now, skipping any backoff wait; rejects with the repository's error
   * if a write fails (the events stay queued and retries go on).
   */
  async flush(): Promise<void> {
    if (this.writing) await this.writing
    if (this.queue.length === 0) return
    this.cancelRetry()
    this.startWriting()
    await this.writing
    if (this.queue.length > 0 && this.failures > 0) throw this.lastError
  }

  /** Stops the timer and writes what is left, retrying with backoff for up to `closeTimeoutMs`. */
  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.ticker)
    const deadline = performance.now() + this.closeTimeoutMs
    const remainingMs = () => deadline - performance.now()
    while (this.queue.length > 0 && remainingMs() > 0) {
      if (!this.writing) {
        this.cancelRetry()
        this.startWriting()
      }
      await withTimeout(this.writing, remainingMs())
      if (this.queue.length > 0 && this.failures > 0 && !this.writing) await withTimeout(null, Math.min(this.retryDelayMs(), remainingMs()))
    }
    this.cancelRetry()
    if (this.queue.length > 0) this.log(`usage recorder: closing with ${this.queue.length} usage events unwritten after ${this.closeTimeoutMs} ms of retries`)
  }

  private startWriting(): void {
    if (this.writing || this.retryTimer || this.queue.length === 0) return
    this.writing = this.writeQueued().finally(() => {
      this.writing = null
    })
  }

  // Writes the events queued when it starts, and keeps going while full batches wait.
  private async writeQueued(): Promise<void> {
    let owed = this.queue.length
    while (owed > 0 || this.queue.length >= this.batchSize) {
      const batch = this.queue.slice(0, this.batchSize)
      try {
        await this.repository.insertUsageEvents(batch)
      } catch (error) {
        this.recordFailure(error)
        return
      }
      // Only record() touches the queue besides this loop, and it appends: the batch is still at the front.
      this.queue.splice(0, batch.length)
      owed -= batch.length
      if (this.refusing && this.queue.length <= this.maxPending / 2) {
        this.refusing = false
        this.log(`usage recorder: ${this.queue.length} usage events wait to be written; accepting requests again`)
      }
      if (this.failures > 0) {
        this.log(`usage recorder: writing usage events again after ${this.failures} failed attempts`)
        this.failures = 0
        this.lastError = null
      }
      // Let requests in between: encoding a batch runs on this thread (and a database opened
      // in-thread, as in tests, writes on it), so back-to-back batches would hold responses.
      if (owed > 0 || this.queue.length >= this.batchSize) await new Promise((resolve) => setImmediate(resolve))
    }
  }

  private recordFailure(error: unknown): void {
    this.failures += 1
    this.lastError = error
    // Once per outage: a database that is down for a minute must not flood the log.
    if (this.failures === 1) this.log(`usage recorder: cannot write usage events, keeping them and retrying: ${(error as Error)?.message ?? error}`)
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null
      this.startWriting()
    }, this.retryDelayMs())
    this.retryTimer.unref()
  }

  private retryDelayMs(): number {
    return Math.min(this.retryMs * 2 ** Math.max(0, this.failures - 1), this.maxRetryMs)
  }

  private cancelRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer)
    this.retryTimer = null
  }
}

// Waits for `promise` (or just the time, given null), at most `timeoutMs`.
async function withTimeout(promise: Promise<void> | null, timeoutMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, timeoutMs))))
  await Promise.race(promise ? [promise, elapsed] : [elapsed])
  clearTimeout(timer)
}
