import { GatewayError } from '@nilegate/shared/errors'
import type { ApiKeyIdentity, IdentityStore } from './ports'

interface CacheEntry {
  identity: ApiKeyIdentity | null
  fetchedAtMs: number
}

export interface KeyCacheOptions {
  /** After this long an entry is refreshed in the background while still being served. */
  refreshAfterMs?: number
  /** Unknown keys are remembered this long, so a flood of bad keys does not reach the database. */
  negativeTtlMs?: number
  maxEntries?: number
  now?: () => number
  /** Where failed lookups are reported; the client gets 503 service_unavailable. */
  log?: (message: string, error: unknown) => void
}

/**
 * Resolves API keys by the hash of their secret, from memory when warm: a known key costs no
 * database round trip. Entries older than `refreshAfterMs` are served while one background lookup
 * refreshes them, so a revoke or expiry change is seen within about that time.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, CacheEntry>()
  private readonly inFlight = new Map<string, Promise<ApiKeyIdentity | null>>()
  private readonly refreshAfterMs: number
  private readonly negativeTtlMs: number
  private readonly maxEntries: number
  private readonly now: () => number
  private readonly log: (message: string, error: unknown) => void

  constructor(private readonly store: IdentityStore, options: KeyCacheOptions = {}) {
    this.refreshAfterMs = options.refreshAfterMs ?? 1_000
    this.negativeTtlMs = options.negativeTtlMs ?? 1_000
    this.maxEntries = options.maxEntries ?? 100_000
    this.now = options.now ?? Date.now
    this.log = options.log ?? ((message, error) => console.error(message, error))
  }

  /** The identity of a key hash, or null when no such key exists. */
  lookup(hashHex: string): ApiKeyIdentity | null | Promise<ApiKeyIdentity | null> {
    const entry = this.entries.get(hashHex)
    if (entry) {
      const ageMs = this.now() - entry.fetchedAtMs
      if (entry.identity === null) {
        if (ageMs < this.negativeTtlMs) return null
      } else {
        if (ageMs >= this.refreshAfterMs) this.fetch(hashHex).catch(() => {})
        return entry.identity
      }
    }
    return this.fetch(hashHex)
  }

  /** Forgets a key so its next use reads the store. */
  invalidate(hashHex: string): void {
    this.entries.delete(hashHex)
  }

  private fetch(hashHex: string): Promise<ApiKeyIdentity | null> {
    const pending = this.inFlight.get(hashHex)
    if (pending) return pending
    const lookup = this.store
      .findApiKeyByHash(hashHex)
      .then((identity) => {
        if (this.entries.size >= this.maxEntries && !this.entries.has(hashHex)) {
          const oldest = this.entries.keys().next().value
          if (oldest !== undefined) this.entries.delete(oldest)
        }
        this.entries.set(hashHex, { identity, fetchedAtMs: this.now() })
        return identity
      })
      .catch((error: unknown) => {
        // A key that is not in memory cannot be checked while the store is down: refuse with a
        // retryable 503 rather than a 500 (warm keys keep being served from memory).
        this.log('looking up an API key failed', error)
        throw new GatewayError('service_unavailable', 'Authentication is temporarily unavailable. Retry in 30 to 60 seconds.')
      })
      .finally(() => this.inFlight.delete(hashHex))
    this.inFlight.set(hashHex, lookup)
    return lookup
  }
}
