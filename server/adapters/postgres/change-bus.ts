import postgres from 'postgres'
import { RemoteChangeBus, type RemoteChangeBusOptions } from '../../core/governance/remote-change-bus'
import { reconnectBackoffS } from './reconnect-backoff'

export interface PostgresChangeBusOptions extends RemoteChangeBusOptions {
  /** Every gateway on one database uses the same channel: a lower-case SQL identifier. */
  channel?: string
  /** The first wait before listening again after the connection was lost; doubles up to 5 s. */
  relistenMs?: number
}

const channelPattern = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Carries governance changes to every gateway instance on one Postgres database with LISTEN and
 * NOTIFY (RemoteChangeBus says how): the bus of deployments without Redis, and beside Redis the
 * way the database's own announcements arrive (JoinedChangeBus). Two connections of its own:
 * one LISTENs and is never given other work, the other sends `pg_notify`. When the listening
 * connection closes (a restart, a network cut) the bus stops covering and listens again, with
 * backoff, on a new connection; each LISTEN starts a new stretch of coverage. The database itself
 * announces changes on the default channel, however they were made (migration 0003's triggers),
 * so edits typed in SQL reach the caches as promptly as the API's.
 */
export class PostgresChangeBus extends RemoteChangeBus {
  private readonly listener: postgres.Sql
  private readonly publisher: postgres.Sql
  private readonly channel: string
  private readonly relistenMs: number
  private listening = false
  private relistenTimer: ReturnType<typeof setTimeout> | undefined

  constructor(databaseUrl: string, options: PostgresChangeBusOptions = {}) {
    super('postgres', options)
    this.channel = options.channel ?? 'nilegate_governance_changes'
    if (!channelPattern.test(this.channel)) throw new RangeError(`channel must be a lower-case SQL identifier: ${JSON.stringify(this.channel)}`)
    this.relistenMs = options.relistenMs ?? 250
    const connection = { application_name: 'nilegate' }
    this.listener = postgres(databaseUrl, {
      max: 1,
      // Kept open for as long as it works: a LISTEN lives and dies with its connection.
      idle_timeout: 0,
      max_lifetime: null,
      connect_timeout: 5,
      fetch_types: false,
      onnotice: () => {},
      onclose: () => this.lost(),
      // postgres.js's own listen() uses this option; its types leave it out. That listen() cannot
      // say when its connection is down, and stops trying if the server is away when it retries.
      ...{ onnotify: (channel: string, payload: string) => channel === this.channel && this.received(payload) },
      connection,
    })
    // Connects on the first publish: beside Redis it never does.
    this.publisher = postgres(databaseUrl, { max: 1, connect_timeout: 5, backoff: reconnectBackoffS, fetch_types: false, onnotice: () => {}, connection })
    void this.listen(this.relistenMs)
  }

  get isListening(): boolean {
    return this.listening
  }

  protected async send(message: string): Promise<void> {
    await this.publisher`select pg_notify(${this.channel}, ${message})`
  }

  /** Stops listening and retrying, and closes both connections. */
  override close(): void {
    super.close()
    clearTimeout(this.relistenTimer)
    this.listening = false
    void this.listener.end({ timeout: 1 }).catch(() => {})
    void this.publisher.end({ timeout: 1 }).catch(() => {})
  }

  /** LISTENs (opening a connection if need be); on failure tries again after `retryMs`, doubling. */
  private async listen(retryMs: number): Promise<void> {
    if (this.closed) return
    try {
      await this.listener.unsafe(`LISTEN ${this.channel}`)
    } catch (error) {
      if (this.closed) return
      if (retryMs === this.relistenMs) this.log(`postgres: listening for governance changes failed (${(error as Error).message}); trying again`)
      this.relistenTimer = setTimeout(() => void this.listen(Math.min(retryMs * 2, 5_000)), retryMs)
      return
    }
    if (this.closed) return
    this.listening = true
    this.beganListening()
  }

  /** The listening connection closed: changes may be missed until a new one listens. */
  private lost(): void {
    if (!this.listening || this.closed) return
    this.listening = false
    this.relistenTimer = setTimeout(() => void this.listen(this.relistenMs), this.relistenMs)
  }
}
