import { RemoteChangeBus, type RemoteChangeBusOptions } from '../../core/governance/remote-change-bus'
import type { RedisClient } from './client'
import { connectToClusterNode, isRedisCluster, type RedisConnection } from './connect-redis'

export interface RedisChangeBusOptions extends RemoteChangeBusOptions {
  /** Every gateway of one deployment uses the same channel. */
  channel?: string
}

/**
 * Carries governance changes to every gateway instance over Redis pub/sub (RemoteChangeBus says
 * how). `connection` PUBLISHes; a second connection SUBSCRIBEs: duplicated from a single server's
 * client, or, on a Redis Cluster, made to one node (the cluster broadcasts PUBLISH to every node),
 * moving to another node when its own stays unreachable. node-redis resubscribes after a
 * reconnect; a subscription that failed because Redis was down is made again once it is back. Each
 * subscription starts a new stretch of coverage.
 */
export class RedisChangeBus extends RemoteChangeBus {
  private subscriber: RedisClient
  private readonly channel: string
  private subscribed = false
  // Which cluster node the next subscriber connects to, and whether it is looking for one that answers.
  private nodeIndex = 0
  private moving = false

  constructor(
    private readonly connection: RedisConnection,
    options: RedisChangeBusOptions = {},
  ) {
    super('redis', options)
    this.channel = options.channel ?? 'nilegate:governance-changes'
    this.subscriber = this.connectSubscriber()
  }

  /** Subscribed, and connected (a reconnect resubscribes before it is ready). */
  get isListening(): boolean {
    return this.subscribed && this.subscriber.isReady
  }

  protected async send(message: string): Promise<void> {
    await this.connection.publish(this.channel, message)
  }

  /** Stops listening and retrying, and closes the subscriber connection; the publishing connection stays open. */
  override close(): void {
    super.close()
    this.subscribed = false
    this.subscriber.destroy()
  }

  private connectSubscriber(): RedisClient {
    const subscriber = isRedisCluster(this.connection) ? connectToClusterNode(this.connection, this.nodeIndex++) : this.connection.duplicate()
    // Unheard 'error' events would throw; the publishing connection already reports outages.
    subscriber.on('error', () => {})
    subscriber.on('ready', () => void this.listen(subscriber))
    // Only a cluster node's connection gives up reconnecting: the bus moves to another node.
    subscriber.on('terminated', () => this.moveSubscriber(subscriber))
    subscriber.connect().catch(() => {})
    return subscriber
  }

  private moveSubscriber(from: RedisClient): void {
    if (this.closed || from !== this.subscriber) return
    this.subscribed = false
    from.destroy()
    if (!this.moving) this.log('redis: the cluster node that governance changes were heard through stopped answering; moving to another')
    this.moving = true
    this.subscriber = this.connectSubscriber()
  }

  /** SUBSCRIBEs, once per connection: repeated calls with the same listener are no-ops in node-redis. */
  private async listen(subscriber: RedisClient): Promise<void> {
    try {
      await subscriber.subscribe(this.channel, this.received)
      if (subscriber !== this.subscriber) return
      this.beganListening()
      this.subscribed = true
      if (this.moving) this.log('redis: governance changes are heard again, through another cluster node')
      this.moving = false
    } catch (error) {
      this.log(`redis: subscribing to governance changes failed (${(error as Error).message}); retrying when reconnected`)
    }
  }
}
