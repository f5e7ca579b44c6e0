import { RemoteChangeBus, type RemoteChangeBusOptions } from '../../core/governance/remote-change-bus'
import type { RedisClient } from './client'

export interface RedisChangeBusOptions extends RemoteChangeBusOptions {
  /** Every gateway of one deployment uses the same channel. */
  channel?: string
}

/**
 * Carries governance changes to every gateway instance over Redis pub/sub (RemoteChangeBus says
 * how). `client` PUBLISHes; a second connection, duplicated from it, SUBSCRIBEs. node-redis
 * resubscribes after a reconnect; a subscription that failed because Redis was down is made again
 * once it is back. Each subscription starts a new stretch of coverage.
 */
export class RedisChangeBus extends RemoteChangeBus {
  private readonly subscriber: RedisClient
  private readonly channel: string
  private subscribed = false

  constructor(
    private readonly client: RedisClient,
    options: RedisChangeBusOptions = {},
  ) {
    super('redis', options)
    this.channel = options.channel ?? 'nilegate:governance-changes'
    this.subscriber = client.duplicate()
    // Unheard 'error' events would throw; the publishing client already reports outages.
    this.subscriber.on('error', () => {})
    this.subscriber.on('ready', () => void this.listen())
    this.subscriber.connect().catch(() => {})
  }

  /** Subscribed, and connected (a reconnect resubscribes before it is ready). */
  get isListening(): boolean {
    return this.subscribed && this.subscriber.isReady
  }

  protected async send(message: string): Promise<void> {
    await this.client.publish(this.channel, message)
  }

  /** Stops listening and retrying, and closes the subscriber connection; the publishing client stays open. */
  override close(): void {
    super.close()
    this.subscribed = false
    this.subscriber.destroy()
  }

  /** SUBSCRIBEs, once per connection: repeated calls with the same listener are no-ops in node-redis. */
  private async listen(): Promise<void> {
    try {
      await this.subscriber.subscribe(this.channel, this.received)
      this.beganListening()
      this.subscribed = true
    } catch (error) {
      this.log(`redis: subscribing to governance changes failed (${(error as Error).message}); retrying when reconnected`)
    }
  }
}
