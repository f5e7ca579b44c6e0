import { answerWithin } from '../answer-within'
import { catalogChangeKinds, LocalChangeBus, type ChangeBus, type GovernanceChange } from './changes'

export interface RemoteChangeBusOptions {
  /** How long sending a change may take before it is given up on (and logged). */
  publishTimeoutMs?: number
  /** How long a failed send is retried, with backoff: the time other instances may keep a covered cache entry. */
  publishRetryForMs?: number
  log?: (message: string) => void
}

/** What travels between instances: the change, and which bus sent it (it has delivered it already). */
interface ChangeMessage {
  from: string
  change: GovernanceChange
}

function isGovernanceChange(value: unknown): value is GovernanceChange {
  const change = value as { kind?: unknown; orgId?: unknown } | null
  if (typeof change !== 'object' || change === null) return false
  return (change.kind === 'organization' && typeof change.orgId === 'string') || catalogChangeKinds.has(change.kind)
}

/**
 * Carries governance changes to every gateway instance through a server they share (Redis pub/sub,
 * Postgres LISTEN/NOTIFY); a subclass owns the connections. `publish` delivers to this instance's
 * listeners first, then sends; what arrives from the others (`received`) goes to the listeners.
 * While the server is away changes only reach this instance and sending logs: caches then rely on
 * their own refresh (the API key cache re-reads entries older than a second) to bound staleness.
 * Each time the subclass starts listening (`beganListening`) a new stretch of `coverage` begins,
 * so what was read before a disconnect is treated as possibly stale once the bus listens again.
 * Other instances trust their caches while they listen, so a send that failed is retried in the
 * background until it goes through or the time they would re-read anyway has passed.
 */
export abstract class RemoteChangeBus implements ChangeBus {
  private readonly local = new LocalChangeBus()
  private readonly publishTimeoutMs: number
  private readonly publishRetryForMs: number
  private readonly retries = new Set<ReturnType<typeof setTimeout>>()
  private readonly busId = crypto.randomUUID()
  private stretch = 0
  protected closed = false
  protected readonly log: (message: string) => void

  protected constructor(
    /** Names the server in log lines and errors. */
    private readonly server: string,
    options: RemoteChangeBusOptions,
  ) {
    this.publishTimeoutMs = options.publishTimeoutMs ?? 1_000
    this.publishRetryForMs = options.publishRetryForMs ?? 60_000
    this.log = options.log ?? ((message) => console.error(message))
  }

  /** Whether changes of other instances are arriving now. */
  abstract get isListening(): boolean

  /** Sends one message to every instance; rejects when it did not go out. */
  protected abstract send(message: string): Promise<void>

  get coverage(): number | null {
    return this.isListening ? this.stretch : null
  }

  /** A subclass calls this each time it (re)starts listening: a new stretch of coverage. */
  protected beganListening(): void {
    this.stretch += 1
  }

  async publish(change: GovernanceChange): Promise<void> {
    this.local.deliver(change)
    const message = JSON.stringify({ from: this.busId, change } satisfies ChangeMessage)
    const failure = await this.trySend(message)
    if (failure === null) return
    // The change is committed; it reaches the others once a retry goes through, or their refresh.
    this.log(`${this.server}: publishing a governance change failed (${failure}); retrying in the background, and other gateways re-read within a minute regardless`)
    this.retrySend(message, performance.now() + this.publishRetryForMs, 250)
  }

  /** Sends; null when it went through, else why not. */
  private async trySend(message: string): Promise<string | null> {
    try {
      await answerWithin(this.send(message), this.publishTimeoutMs, this.server)
      return null
    } catch (error) {
      return (error as Error).message
    }
  }

  private retrySend(message: string, untilMs: number, delayMs: number): void {
    if (this.closed || performance.now() + delayMs > untilMs) return
    const timer = setTimeout(async () => {
      this.retries.delete(timer)
      if (this.closed) return
      if ((await this.trySend(message)) === null) this.log(`${this.server}: a governance change that failed to publish went through`)
      else this.retrySend(message, untilMs, Math.min(delayMs * 2, 5_000))
    }, delayMs)
    this.retries.add(timer)
  }

  subscribe(listener: (change: GovernanceChange) => void): () => void {
    return this.local.subscribe(listener)
  }

  /** Stops retrying; a subclass closes its connections too. */
  close(): void {
    this.closed = true
    for (const timer of this.retries) clearTimeout(timer)
    this.retries.clear()
  }

  /** Hands a message from the server to the listeners, unless this bus sent it or it is no change. */
  protected readonly received = (raw: string): void => {
    let message: ChangeMessage
    try {
      message = JSON.parse(raw) as ChangeMessage
    } catch {
      this.log(`${this.server}: ignoring a governance change that is not JSON: ${raw.slice(0, 200)}`)
      return
    }
    if (message?.from === this.busId) return
    if (!isGovernanceChange(message?.change)) {
      this.log(`${this.server}: ignoring an unknown governance change: ${raw.slice(0, 200)}`)
      return
    }
    this.local.deliver(message.change)
  }
}
