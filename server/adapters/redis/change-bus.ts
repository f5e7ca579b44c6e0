import { catalogChangeKinds, LocalChangeBus, type ChangeBus, type GovernanceChange } from '../../core/governance/changes'
import { withDeadline, type RedisClient } from './client'

export interface RedisChangeBusOptions {
  /** Every gateway of one deployment uses the same channel. */
  channel?: string
  /** How long a PUBLISH may take before it is given up on (and logged). */
  publishTimeoutMs?: number
  /** How long a failed PUBLISH is retried, with backoff: the time other instances may keep a covered cache entry. */
  publishRetryForMs?: number
  log?: (message: string) => void
}

/** What travels on the channel: the change, and which bus sent it (it has delivered it already). */
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
 * Carries governance changes to every gateway instance over Redis pub/sub. `publish` delivers to
 * this instance's listeners first, then PUBLISHes; a second connection, duplicated from `client`,
 * SUBSCRIBEs and hands other instances' changes to the listeners. node-redis resubscribes after a
 * reconnect; a subscription that failed because Redis was down is made again once it is back.
 * While Redis is down changes only reach this instance and publishing logs: caches then rely on
 * their own refresh (the API key cache re-reads entries older than a second) to bound staleness.
 * Each subscription starts a new stretch of `coverage`, so what was read before a disconnect is
 * treated as possibly stale once the bus listens again. Other instances trust their caches while
 * they listen, so a PUBLISH that failed is retried in the background until it goes through or the
 * time they would re-read anyway has passed.
 */
export class RedisChangeBus implements ChangeBus {
  private readonly local = new LocalChangeBus()
  private readonly subscriber: RedisClient
  private readonly channel: string
  private readonly publishTimeoutMs: number
  private readonly publishRetryForMs: number
  private readonly retries = new Set<ReturnType<typeof setTimeout>>()
  private closed = false
  private readonly log: (message: string) => void
  private readonly busId = crypto.randomUUID()
  private subscribed = false
  private stretch = 0

  constructor(
    private readonly client: RedisClient,
    options: RedisChangeBusOptions = {},
  ) {
    this.channel = options.channel ?? 'nilegate:governance-changes'
    this.publishTimeoutMs = options.publishTimeoutMs ?? 1_000
    this.publishRetryForMs = options.publishRetryForMs ?? 60_000
    this.log = options.log ?? ((message) => console.error(message))
    this.subscriber = client.duplicate()
    // Unheard 'error' events would throw; the publishing client already reports outages.
    this.subscriber.on('error', () => {})
    this.subscriber.on('ready', () => void this.listen())
    this.subscriber.connect().catch(() => {})
  }

  /** Whether changes of other instances are arriving: subscribed, and connected (a reconnect resubscribes before it is ready). */
  get isListening(): boolean {
    return this.subscribed && this.subscriber.isReady
  }

  get coverage(): number | null {
    return this.isListening ? this.stretch : null
  }

  async publish(change: GovernanceChange): Promise<void> {
    this.local.deliver(change)
    const message = JSON.stringify({ from: this.busId, change } satisfies ChangeMessage)
    const failure = await this.tryPublish(message)
    if (failure === null) return
    // The change is committed; it reaches the others once a retry goes through, or their refresh.
    this.log(`redis: publishing a governance change failed (${failure}); retrying in the background, and other gateways re-read within a minute regardless`)
    this.retryPublish(message, performance.now() + this.publishRetryForMs, 250)
  }

  /** PUBLISHes; null when it went through, else why not. */
  private async tryPublish(message: string): Promise<string | null> {
    try {
      await withDeadline(this.client.publish(this.channel, message), this.publishTimeoutMs)
      return null
    } catch (error) {
      return (error as Error).message
    }
  }

  private retryPublish(message: string, untilMs: number, delayMs: number): void {
    if (this.closed || performance.now() + delayMs > untilMs) return
    const timer = setTimeout(async () => {
      this.retries.delete(timer)
      if (this.closed) return
      if ((await this.tryPublish(message)) === null) this.log('redis: a governance change that failed to publish went through')
      else this.retryPublish(message, untilMs, Math.min(delayMs * 2, 5_000))
    }, delayMs)
    this.retries.add(timer)
  }

  subscribe(listener: (change: GovernanceChange) => void): () => void {
    return this.local.subscribe(listener)
  }

  /** Stops listening and retrying, and closes the subscriber connection; the publishing client stays open. */
  close(): void {
    this.closed = true
    for (const timer of this.retries) clearTimeout(timer)
    this.retries.clear()
    this.subscribed = false
    this.subscriber.destroy()
  }

  /** SUBSCRIBEs, once per connection: repeated calls with the same listener are no-ops in node-redis. */
  private async listen(): Promise<void> {
    try {
      await this.subscriber.subscribe(this.channel, this.receive)
      this.stretch += 1
      this.subscribed = true
    } catch (error) {
      this.log(`redis: subscribing to governance changes failed (${(error as Error).message}); retrying when reconnected`)
    }
  }

  private readonly receive = (raw: string): void => {
    let message: ChangeMessage
    try {
      message = JSON.parse(raw) as ChangeMessage
    } catch {
      this.log(`redis: ignoring a governance change that is not JSON: ${raw.slice(0, 200)}`)
      return
    }
    if (message.from === this.busId) return
    if (!isGovernanceChange(message.change)) {
      this.log(`redis: ignoring an unknown governance change: ${raw.slice(0, 200)}`)
      return
    }
    this.local.deliver(message.change)
  }
}
