import { billingMonth, rateWindowMs, type AdmitRequest, type Admitted } from '../../core/admission'
import type { LeaseEnd } from './admission-scripts'

/** The longest lease: admit.lua keeps a window this much longer than the window for leases' entries. */
export const maxLeaseMs = 10_000

/** The most slots a gateway asks one lease for. */
export const maxLeaseSlots = 64

/**
 * A lease this gateway holds (admit.lua): slots in one key's window and money held for them, from
 * which it admits that key's requests itself until `endMs`, without a script run each.
 */
export interface Lease {
  /** The request that asked for it: also the id of its hold and of its window entries. */
  readonly id: string
  /** `orgId|keyId`, its place in the maps. */
  readonly key: string
  readonly orgId: string
  readonly keyId: string
  readonly projectId: string
  readonly month: string
  /** The limits it was granted under: a request under others goes to Redis. */
  readonly rpmLimit: number
  readonly keyCapMicros: bigint | null
  readonly projectCapMicros: bigint | null
  readonly timeZone: string | undefined
  readonly slots: number
  /** When each slot after the first (the asking request's) was taken. */
  readonly takenAtMs: number[]
  /** Held in Redis and not promised to a request. */
  unusedMicros: bigint
  readonly startMs: number
  readonly endMs: number
  /** When its hold expires in Redis: no request under it may need its share later. */
  readonly holdExpiresAtMs: number
  /** What the asking request was told remained of the window, and when its oldest entry leaves. */
  readonly remainingAtStart: number
  readonly resetAtMs: number
}

/** Where a request admitted under a lease settles: the lease's hold, its worst case being its share. */
export interface LeaseShare {
  id: string
  shareMicros: bigint
}

/**
 * This gateway's leases, by key, and the requests admitted under them until they settle.
 *
 * A key asks for a lease on its second admission within `leaseMs` (a request now and then goes to
 * Redis alone), for twice the slots its last lease used, at least 4 and at most `maxLeaseSlots`;
 * Redis grants at most a quarter of what is left (admit.lua). A lease ends at `endMs`, once its
 * slots or money are used up, when a request of its key comes under other limits or month, or when
 * what Redis holds is in doubt (`endAll`); `end` is then handed what no request took, which
 * end-leases.lua releases at once. So a lease refuses other requests early only while it lasts, by
 * what it has not used: at most `leaseMs`. The requests admitted under it keep their shares of its
 * hold until they settle, as they would keep holds of their own.
 */
export class AdmissionLeases {
  /** The lease each key admits under, by `orgId|keyId`. */
  private readonly current = new Map<string, Lease>()
  /** The lease of each request admitted under one, until it is settled. */
  private readonly shares = new Map<string, LeaseShare>()
  /** When each key last had a request admitted, and how many slots its last lease used. */
  private readonly recent = new Map<string, { atMs: number; used: number }>()
  /** Keys with a lease asked for and not answered yet: their other requests go to Redis alone. */
  private readonly asking = new Set<string>()
  /** Ended leases whose end Redis did not take, tried again at the next sweep while their holds live. */
  private unsent: Lease[] = []
  private sweeper: ReturnType<typeof setInterval> | undefined

  constructor(
    readonly leaseMs: number,
    private readonly send: (end: LeaseEnd) => Promise<void>,
  ) {}

  /** Admits `request` under its key's lease, or answers null: then Redis decides. */
  admitLocally(request: AdmitRequest): Admitted | null {
    const lease = this.current.get(keyOf(request))
    if (!lease) return null
    const now = request.nowMs
    const fits =
      now < lease.endMs &&
      now >= lease.startMs &&
      sameLimits(lease, request) &&
      request.worstCaseMicros <= lease.unusedMicros &&
      now + request.reservationTtlMs <= lease.holdExpiresAtMs &&
      billingMonth(now, request.timeZone) === lease.month
    if (!fits) {
      this.end(lease)
      return null
    }
    if (this.shares.has(request.requestId)) throw new Error(`request ${request.requestId} was admitted before`)
    this.take(lease, request)
    return {
      admitted: true,
      limit: lease.rpmLimit,
      remaining: Math.max(0, lease.remainingAtStart - lease.takenAtMs.length),
      resetMs: Math.min(rateWindowMs, Math.max(0, lease.resetAtMs - now)),
      month: lease.month,
      reservedMicros: request.worstCaseMicros,
      expiresAtMs: now + request.reservationTtlMs,
    }
  }

  /** How many slots to ask Redis for with `request` (1: the request alone). Call `asked` once answered. */
  slotsFor(request: AdmitRequest): number {
    const key = keyOf(request)
    const recent = this.recent.get(key)
    this.recent.set(key, { atMs: request.nowMs, used: recent?.used ?? 1 })
    this.sweepLater()
    if (!recent || request.nowMs - recent.atMs > this.leaseMs || this.asking.has(key)) return 1
    this.asking.add(key)
    return Math.min(maxLeaseSlots, Math.max(4, 2 * recent.used))
  }

  /** Redis answered the request that asked for `slots` (whatever the answer). */
  asked(request: AdmitRequest, slots: number): void {
    if (slots > 1) this.asking.delete(keyOf(request))
  }

  /** When a lease asked for with `request` would end. */
  endOf(request: AdmitRequest): number {
    return request.nowMs + this.leaseMs
  }

  /** Redis admitted `request` with a lease of `slots` (more than 1): its key admits under it from now on. */
  granted(request: AdmitRequest, month: string, slots: number, remaining: number, resetMs: number): void {
    const key = keyOf(request)
    const previous = this.current.get(key)
    if (previous) this.end(previous)
    const lease: Lease = {
      id: request.requestId,
      key,
      orgId: request.orgId,
      keyId: request.keyId,
      projectId: request.projectId,
      month,
      rpmLimit: request.rpmLimit,
      keyCapMicros: request.keyCapMicros,
      projectCapMicros: request.projectCapMicros,
      timeZone: request.timeZone,
      slots,
      takenAtMs: [],
      unusedMicros: request.worstCaseMicros * BigInt(slots - 1),
      startMs: request.nowMs,
      endMs: this.endOf(request),
      holdExpiresAtMs: request.nowMs + request.reservationTtlMs + this.leaseMs,
      remainingAtStart: remaining,
      resetAtMs: request.nowMs + resetMs,
    }
    this.current.set(key, lease)
    this.shares.set(request.requestId, { id: lease.id, shareMicros: request.worstCaseMicros })
    this.sweepLater()
  }

  /** Redis admitted `request` under lease `leaseId`, granted earlier in the same script run. */
  takenInRun(request: AdmitRequest, leaseId: string): void {
    const lease = this.current.get(keyOf(request))
    // The replies of a run are handled in order, the grant's first, and nothing ends a lease in
    // between; were it ended, the request still settles against the lease's hold.
    if (lease?.id === leaseId) this.take(lease, request)
    else this.shares.set(request.requestId, { id: leaseId, shareMicros: request.worstCaseMicros })
  }

  /** The lease `requestId` was admitted under, and its share, while its settlement is not in. */
  shareOf(requestId: string): LeaseShare | undefined {
    return this.shares.get(requestId)
  }

  /** The settlement of `requestId` is in: Redis released its share. */
  settled(requestId: string): void {
    this.shares.delete(requestId)
  }

  /** Ends every lease of `orgId`, or of every organization: what Redis holds for them is in doubt. */
  endAll(orgId?: string): void {
    for (const lease of [...this.current.values()]) if (orgId === undefined || lease.orgId === orgId) this.end(lease)
  }

  /** Open leases and requests admitted under leases and not settled. */
  get size(): { leases: number; requests: number } {
    return { leases: this.current.size, requests: this.shares.size }
  }

  private take(lease: Lease, request: AdmitRequest): void {
    lease.takenAtMs.push(request.nowMs)
    const recent = this.recent.get(lease.key)
    if (recent && recent.atMs < request.nowMs) recent.atMs = request.nowMs
    lease.unusedMicros -= request.worstCaseMicros
    this.shares.set(request.requestId, { id: lease.id, shareMicros: request.worstCaseMicros })
    if (lease.takenAtMs.length + 1 >= lease.slots) this.end(lease)
  }

  private end(lease: Lease): void {
    if (this.current.get(lease.key) !== lease) return
    this.current.delete(lease.key)
    const recent = this.recent.get(lease.key)
    if (recent) recent.used = lease.takenAtMs.length + 1
    this.sendEnd(lease)
  }

  /** Hands Redis what an ended lease did not use (nothing changes a lease once ended). */
  private sendEnd(lease: Lease): void {
    const end = { orgId: lease.orgId, leaseId: lease.id, keyId: lease.keyId, slots: lease.slots, unusedMicros: lease.unusedMicros, takenAtMs: lease.takenAtMs }
    this.send(end).catch(() => {
      this.unsent.push(lease)
      this.sweepLater()
    })
  }

  private sweepLater(): void {
    if (this.sweeper) return
    this.sweeper = setInterval(() => this.sweep(Date.now()), this.leaseMs)
    this.sweeper.unref?.()
  }

  private sweep(nowMs: number): void {
    for (const lease of [...this.current.values()]) if (nowMs >= lease.endMs) this.end(lease)
    const unsent = this.unsent
    this.unsent = []
    for (const lease of unsent) if (nowMs < lease.holdExpiresAtMs) this.sendEnd(lease)
    for (const [key, recent] of this.recent) if (nowMs - recent.atMs > 2 * this.leaseMs) this.recent.delete(key)
    if (this.current.size === 0 && this.unsent.length === 0 && this.recent.size === 0) {
      clearInterval(this.sweeper)
      this.sweeper = undefined
    }
  }
}

function keyOf(request: { orgId: string; keyId: string }): string {
  return `${request.orgId}|${request.keyId}`
}

function sameLimits(lease: Lease, request: AdmitRequest): boolean {
  return (
    request.projectId === lease.projectId &&
    request.rpmLimit === lease.rpmLimit &&
    request.keyCapMicros === lease.keyCapMicros &&
    request.projectCapMicros === lease.projectCapMicros &&
    request.timeZone === lease.timeZone
  )
}
