import { GatewayError } from '@nilegate/shared/errors'
import { answerWithin } from './answer-within'
import type { ChangeBus } from './governance/changes'
import type { ApiKeyIdentity, IdentityStore } from './ports'

interface CacheEntry {
  identity: ApiKeyIdentity | null
  fetchedAtMs: number
  /** The change bus's stretch when the read began (ChangeBus.coverage). */
  coverage: number | null
}

export interface KeyCacheOptions {
  /** After this long an entry is refreshed in the background while still being served. */
  refreshAfterMs?: number
  /**
   * The same for an entry read while the subscribed change bus delivers every change, as long as it
   * has not had a gap since: the bus drops changed keys at once, so this refresh is only a backstop
   * (for edits made straight in the database) and keeps a thousand busy keys from costing a
   * thousand lookups a second.
   */
  coveredRefreshAfterMs?: number
  /** Unknown keys are remembered this long, so a flood of bad keys does not reach the database. */
  negativeTtlMs?: number
  maxEntries?: number
  /**
   * How long a caller waits for the store before its key is refused with 503. A database that
   * accepts connections and drops them can leave a read pending for good (its driver reconnects);
   * the read goes on, and later callers of the same key join it with their own wait.
   */
  lookupTimeoutMs?: number
  now?: () => number
  /** Where failed lookups are reported; the client gets 503 service_unavailable. */
  log?: (message: string, error: unknown) => void
}

/**
 * Resolves API keys by the hash of their secret, from memory when warm: a known key costs no
 * database round trip. Entries older than `refreshAfterMs` are served while one background lookup
 * refreshes them, so a revoke or expiry change is seen within about that time even when no change
 * notice arrives; a notice (`subscribeTo`) drops the organization's entries at once. While the bus
 * is known to deliver every change, entries read since its last gap wait `coveredRefreshAfterMs`.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, CacheEntry>()
  /** The read each key's callers join, while it is younger than `lookupTimeoutMs`. */
  private readonly inFlight = new Map<string, { read: Promise<ApiKeyIdentity | null>; startedAtMs: number }>()
  /** Reads still running, joined or given up on. */
  private running = 0
  /** Counts invalidations; a read notes the count it started at. */
  private generation = 0
  /**
   * The generation of each organization's latest invalidation, kept while reads that started
   * before it may still be running (it is cleared whenever no read is).
   */
  private readonly invalidatedAt = new Map<string, number>()
  private readonly refreshAfterMs: number
  private readonly coveredRefreshAfterMs: number
  private changes: ChangeBus | null = null
  private readonly negativeTtlMs: number
  private readonly maxEntries: number
  private readonly lookupTimeoutMs: number
  private readonly now: () => number
  private readonly log: (message: string, error: unknown) => void

  constructor(private readonly store: IdentityStore, options: KeyCacheOptions = {}) {
    this.refreshAfterMs = options.refreshAfterMs ?? 1_000
    this.coveredRefreshAfterMs = options.coveredRefreshAfterMs ?? 60_000
    this.negativeTtlMs = options.negativeTtlMs ?? 1_000
    this.maxEntries = options.maxEntries ?? 100_000
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? 5_000
    this.now = options.now ?? Date.now
    this.log = options.log ?? ((message, error) => (error === undefined ? console.error(message) : console.error(message, error)))
  }

  /** The identity of a key hash, or null when no such key exists. */
  lookup(hashHex: string): ApiKeyIdentity | null | Promise<ApiKeyIdentity | null> {
    const known = this.cached(hashHex)
    return known !== undefined ? known : this.fetch(hashHex)
  }

  /**
   * What memory says of a key hash without asking the store: its identity, null while it is
   * remembered as unknown, undefined when only `lookup` (a database read) can tell. Callers use it
   * to decide whether a lookup may cost a read before starting one.
   */
  cached(hashHex: string): ApiKeyIdentity | null | undefined {
    const entry = this.entries.get(hashHex)
    if (!entry) return undefined
    const ageMs = this.now() - entry.fetchedAtMs
    if (entry.identity === null) return ageMs < this.negativeTtlMs ? null : undefined
    if (ageMs >= this.refreshAfterMs && (ageMs >= this.coveredRefreshAfterMs || !this.covered(entry))) this.startRead(hashHex).catch(() => {})
    return entry.identity
  }

  /**
   * Forgets every key of an organization, so their next use reads the store. A read that started
   * before this call and answers for the organization is not cached: it is read again. Changes are
   * rare next to lookups, so scanning the entries beats keeping an index by organization.
   */
  invalidateOrganization(orgId: string): void {
    this.invalidatedAt.set(orgId, ++this.generation)
    for (const [hashHex, entry] of this.entries) {
      if (entry.identity?.orgId === orgId) this.entries.delete(hashHex)
    }
  }

  /** Drops an organization's keys whenever `changes` announces a change of it; returns the unsubscribe. */
  subscribeTo(changes: ChangeBus): () => void {
    this.changes = changes
    const unsubscribe = changes.subscribe((change) => {
      if (change.kind === 'organization') this.invalidateOrganization(change.orgId)
    })
    return () => {
      if (this.changes === changes) this.changes = null
      unsubscribe()
    }
  }

  /** Whether a read of the key is under way, which another lookup of it would join. */
  isBeingRead(hashHex: string): boolean {
    const pending = this.inFlight.get(hashHex)
    return pending !== undefined && this.now() - pending.startedAtMs < this.lookupTimeoutMs
  }

  // Read during the bus's current stretch: any change since would have dropped it.
  private covered(entry: CacheEntry): boolean {
    return entry.coverage !== null && entry.coverage === (this.changes?.coverage ?? null)
  }

  /** Waits up to `lookupTimeoutMs` for the key's read; refuses with 503 when it fails or takes longer. */
  private fetch(hashHex: string): Promise<ApiKeyIdentity | null> {
    const read = this.startRead(hashHex)
    return answerWithin(read, this.lookupTimeoutMs, 'the database').catch(() => {
      if (this.inFlight.get(hashHex)?.read === read) this.log(`looking up an API key got no answer within ${this.lookupTimeoutMs} ms`, undefined)
      // A key that is not in memory cannot be checked while the store is down: refuse with a
      // retryable 503 rather than a 500 (warm keys keep being served from memory).
      throw new GatewayError('service_unavailable', 'Authentication is temporarily unavailable. Retry in 30 to 60 seconds.')
    })
  }

  /**
   * The key's read in flight, or a new one when there is none or it has run past the lookup
   * timeout (a read the store never answers must not keep the key from being read again).
   * Each read that fails is logged once.
   */
  private startRead(hashHex: string): Promise<ApiKeyIdentity | null> {
    const nowMs = this.now()
    const pending = this.inFlight.get(hashHex)
    if (pending && nowMs - pending.startedAtMs < this.lookupTimeoutMs) return pending.read
    this.running += 1
    const read: Promise<ApiKeyIdentity | null> = this.read(hashHex).finally(() => {
      if (this.inFlight.get(hashHex)?.read === read) this.inFlight.delete(hashHex)
      if (--this.running === 0) this.invalidatedAt.clear()
    })
    read.catch((error: unknown) => this.log('looking up an API key failed', error))
    this.inFlight.set(hashHex, { read, startedAtMs: nowMs })
    return read
  }

  /**
   * Reads a key from the store and caches it, unless its organization was invalidated while the
   * read ran: the answer may predate the change, so it is read again, and when that read is
   * overtaken too its answer goes to the waiting callers without being cached.
   */
  private async read(hashHex: string, rereads = 1): Promise<ApiKeyIdentity | null> {
    const startedAt = this.generation
    const coverage = this.changes?.coverage ?? null
    const identity = await this.store.findApiKeyByHash(hashHex)
    const overtaken = identity !== null && (this.invalidatedAt.get(identity.orgId) ?? 0) > startedAt
    if (!overtaken) this.remember(hashHex, identity, coverage)
    else if (rereads > 0) return this.read(hashHex, rereads - 1)
    return identity
  }

  private remember(hashHex: string, identity: ApiKeyIdentity | null, coverage: number | null): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(hashHex)) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    this.entries.set(hashHex, { identity, fetchedAtMs: this.now(), coverage })
  }
}
