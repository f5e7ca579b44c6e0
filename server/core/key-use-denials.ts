import type { ErrorCode } from '@nilegate/shared/errors'
import { keyUseDenialReasons, type KeyUseDenialReason, type ProjectStore } from './governance/projects'
import type { ApiKeyIdentity } from './ports'

export interface KeyUseDenialRecorderOptions {
  /** One record per key and reason in this window; the rest of a flood is dropped. */
  intervalMs?: number
  /** Key-and-reason pairs remembered; the oldest is forgotten first. */
  maxEntries?: number
  now?: () => number
  /** Where failed writes are reported; the client never sees them. */
  log?: (message: string, error: unknown) => void
}

function isAudited(code: ErrorCode): code is KeyUseDenialReason {
  return (keyUseDenialReasons as readonly string[]).includes(code)
}

/**
 * Writes an audit record when a known key is refused for a security reason (wrong IP, revoked,
 * expired, missing scope), off the request path and at most once per key and reason per window,
 * so a client hammering with a refused key costs one write a minute.
 */
export class KeyUseDenialRecorder {
  private readonly lastRecordedMs = new Map<string, number>()
  private readonly intervalMs: number
  private readonly maxEntries: number
  private readonly now: () => number
  private readonly log: (message: string, error: unknown) => void

  constructor(
    private readonly store: Pick<ProjectStore, 'recordKeyUseDenied'>,
    options: KeyUseDenialRecorderOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 60_000
    this.maxEntries = options.maxEntries ?? 10_000
    this.now = options.now ?? Date.now
    this.log = options.log ?? ((message, error) => console.error(message, error))
  }

  /** Records the refusal `code` of `identity` if it is audited and not yet recorded in this window. */
  record(identity: ApiKeyIdentity, code: ErrorCode, ip: string | null, requestId: string | null): void {
    if (!isAudited(code)) return
    const slot = `${identity.keyId} ${code}`
    const nowMs = this.now()
    const last = this.lastRecordedMs.get(slot)
    if (last !== undefined && nowMs - last < this.intervalMs) return
    // Re-inserted so that the map's order is oldest first, for eviction.
    this.lastRecordedMs.delete(slot)
    this.lastRecordedMs.set(slot, nowMs)
    if (this.lastRecordedMs.size > this.maxEntries) this.lastRecordedMs.delete(this.lastRecordedMs.keys().next().value!)
    const denial = { orgId: identity.orgId, projectId: identity.projectId, keyId: identity.keyId, reason: code, ip, requestId }
    Promise.resolve()
      .then(() => this.store.recordKeyUseDenied(denial))
      .catch((error: unknown) => this.log(`recording a refused use of API key ${identity.keyId} failed`, error))
  }
}
