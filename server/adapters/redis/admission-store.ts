import {
  billingMonth,
  checkAdmitRequest,
  checkChange,
  checkCounters,
  checkCredit,
  checkLateUsage,
  checkMonth,
  checkOrgId,
  checkSettlement,
  creditOverflow,
  defaultLoadFenceMs,
  defaultSettledRetentionMs,
  maxMicros,
  keptSettlementTtlMs,
  rateWindowMs,
  type AdmissionStore,
  type AdmitRequest,
  type AdmitResult,
  type CreditOutcome,
  type LateApplied,
  type LateUsage,
  type LoadFence,
  type OrgCounters,
  type OrgSnapshot,
  type ReservationView,
  type SettleResult,
  type Settlement,
  type WatchedSnapshot,
  withoutExpiredHolds,
} from '../../core/admission'
import {
  admissionScripts,
  OrgKeys,
  runAdjust,
  runAdmit,
  runApplyLate,
  runBeginLoad,
  runCredit,
  runFinishLoad,
  runLoadCounters,
  runReleaseExpired,
  runEndLeases,
  runSettle,
  runSnapshot,
  runWatchSettled,
  type AdmitReply,
  type LeaseEnd,
  type SettleReply,
  type SnapshotReply,
} from './admission-scripts'
import { AdmissionLeases, maxLeaseMs, type LeaseShare } from './admission-leases'
import { TurnBatches, TurnEnd } from '../../core/turn-batches'
import { redisFailure, withDeadline } from './client'
import { isRedisCluster, type RedisConnection } from './connect-redis'

export interface RedisAdmissionStoreOptions {
  /** Put before every key (outside the hash tag): isolates tests, or deployments sharing a Redis. */
  keyPrefix?: string
  settledRetentionMs?: number
  /** Most expired holds one admit releases before it decides, which bounds the script's run time. */
  releaseBatch?: number
  /** How long one call may wait for Redis before it fails with service_unavailable. */
  commandTimeoutMs?: number
  /** How long a rebuild's fence lasts if its rebuilder never finishes. */
  loadFenceMs?: number
  /**
   * How long a lease lasts (admission-leases.ts): a key's requests admitted by this gateway from
   * slots and money Redis set aside for them, one script run for many. 0 (the default): every
   * request goes to Redis.
   */
  leaseMs?: number
}

/** An admission as admit.lua takes it: the request, and the lease it asks for, if any. */
type AdmitItem = AdmitRequest & { slots?: number; leaseEndMs?: number }

// A month's spend counters outlive the month (requests admitted before midnight settle into it)
// and then expire on their own; every settle pushes the expiry out again.
const monthCountersTtlMs = 62 * 24 * 60 * 60_000
// Late usage rows per script run: about a millisecond of Redis's time.
const lateRowsPerCall = 500
// Admissions or settlements per script run: a few hundred microseconds of Redis's time.
const callsPerRun = 200

/**
 * The admission store shared by every gateway on one Redis (or Redis Cluster): each operation is
 * one script, run with EVALSHA in one round trip; the admissions, and the settlements, of one turn
 * of the event loop share their organization's run (`TurnBatches`). Redis unreachable, or not
 * answering within `commandTimeoutMs`: every method throws GatewayError('service_unavailable'). A
 * call given up on may still have run in Redis: an admission's hold then expires with its TTL, and
 * a settle may be repeated safely.
 *
 * Redis must not evict these keys (maxmemory-policy noeviction): a lost balance reads as "not
 * loaded" and is rebuilt, but a lost hold or settled marker would go unnoticed.
 */
export class RedisAdmissionStore implements AdmissionStore {
  private readonly keyPrefix: string
  private readonly settledRetentionMs: number
  private readonly releaseBatch: number
  private readonly commandTimeoutMs: number
  private readonly loadFenceMs: number
  /**
   * Where the admissions and the settlements of a turn are sent. The PING (one a turn that has
   * any, about a microsecond of Redis's time) makes node-redis write them in that turn. A cluster
   * client writes to a connection per master, and a PING would reach one of them: none is sent.
   */
  private readonly turn = new TurnEnd(() => {
    if (!isRedisCluster(this.client)) void this.client.ping().catch(() => {})
  })
  /** Admissions and settlements of this turn of the event loop, by organization and month: one script run each. */
  private readonly admissions = new TurnBatches<AdmitItem, AdmitReply>(callsPerRun, (requests) => this.runAdmissions(requests), this.turn)
  private readonly settlements = new TurnBatches<Settlement & { lease?: LeaseShare }, SettleReply>(callsPerRun, (settlements) => this.runSettlements(settlements), this.turn)
  /** Leases that admit no more, by organization: one end-leases.lua run each a turn. */
  private readonly leaseEnds = new TurnBatches<LeaseEnd, number>(
    callsPerRun,
    async (ends) => {
      await this.attempt(() => runEndLeases(this.client, this.keys(ends[0]!.orgId), ends))
      return ends.map(() => 0)
    },
    this.turn,
  )
  /** This gateway's leases; null when leases are off. */
  private readonly leases: AdmissionLeases | null

  constructor(
    private readonly client: RedisConnection,
    options: RedisAdmissionStoreOptions = {},
  ) {
    this.keyPrefix = options.keyPrefix ?? ''
    if (/[{}]/.test(this.keyPrefix)) throw new RangeError('keyPrefix must not contain braces: they would replace the hash tag')
    this.settledRetentionMs = options.settledRetentionMs ?? defaultSettledRetentionMs
    this.releaseBatch = options.releaseBatch ?? 1_000
    this.commandTimeoutMs = options.commandTimeoutMs ?? 1_000
    this.loadFenceMs = options.loadFenceMs ?? defaultLoadFenceMs
    const leaseMs = options.leaseMs ?? 0
    if (!Number.isSafeInteger(leaseMs) || leaseMs < 0 || leaseMs > maxLeaseMs) throw new RangeError(`leaseMs must be an integer from 0 to ${maxLeaseMs}: ${leaseMs}`)
    this.leases = leaseMs > 0 ? new AdmissionLeases(leaseMs, async (end) => void (await this.leaseEnds.add(end.orgId, end))) : null
    // A connection that broke may mean a Redis that restarted empty: its leases' holds and window
    // entries would be gone while this gateway went on admitting under them.
    if (this.leases) for (const event of ['error', 'reconnecting', 'end']) (client as unknown as { on?: (event: string, listener: () => void) => void }).on?.(event, () => this.leases!.endAll())
  }

  /**
   * Sends every script with SCRIPT LOAD (to every master of a cluster): call at start (a script
   * that is missing later is loaded again).
   */
  async loadScripts(): Promise<void> {
    try {
      await withDeadline(Promise.all(admissionScripts.map((script) => script.loadEverywhere(this.client))), this.commandTimeoutMs)
    } catch (error) {
      throw redisFailure(error)
    }
  }

  /** This gateway's open leases and the requests admitted under leases and not yet settled (none when leases are off). */
  get leased(): { leases: number; requests: number } {
    return this.leases?.size ?? { leases: 0, requests: 0 }
  }

  async admit(request: AdmitRequest): Promise<AdmitResult> {
    checkAdmitRequest(request)
    const leased = this.leases?.admitLocally(request)
    if (leased) return leased
    const month = billingMonth(request.nowMs, request.timeZone)
    const expiresAtMs = request.nowMs + request.reservationTtlMs
    const slots = this.leases?.slotsFor(request) ?? 1
    // A lease, if granted, ends at leaseEndMs; its hold outlives it by the request's own TTL (admit.lua).
    const item: AdmitItem = slots > 1 ? { ...request, slots, leaseEndMs: this.leases!.endOf(request) } : request
    let reply: AdmitReply
    try {
      reply = await this.admissions.add(`${request.orgId}|${month}`, item)
    } finally {
      this.leases?.asked(request, slots)
    }
    if (reply[0] === 'not_loaded') this.leases?.endAll(request.orgId)
    if (reply[0] === 'fenced') {
      // Rebuilt counters: leases granted before may still admit until they end; this one waits them out.
      this.leases?.endAll(request.orgId)
      const waitMs = Math.min(reply[1], maxLeaseMs)
      await Bun.sleep(waitMs)
      return this.admit({ ...request, nowMs: request.nowMs + waitMs })
    }
    switch (reply[0]) {
      case 'admitted':
        if (reply[3] > 1) this.leases!.granted(request, month, reply[3], reply[1], reply[2])
        return { admitted: true, limit: request.rpmLimit, remaining: reply[1], resetMs: reply[2], month, reservedMicros: request.worstCaseMicros, expiresAtMs }
      case 'leased':
        this.leases!.takenInRun(request, reply[1])
        return { admitted: true, limit: request.rpmLimit, remaining: reply[2], resetMs: reply[3], month, reservedMicros: request.worstCaseMicros, expiresAtMs }
      case 'rate_limit_exceeded':
        return { admitted: false, reason: 'rate_limit_exceeded', limit: request.rpmLimit, retryAfterS: reply[1] }
      case 'spending_cap_reached':
        return { admitted: false, reason: 'spending_cap_reached', capMicros: request.keyCapMicros! }
      case 'project_spend_cap_exceeded':
        return { admitted: false, reason: 'project_spend_cap_exceeded', capMicros: request.projectCapMicros! }
      case 'duplicate':
        throw new Error(`request ${request.requestId} was admitted before`)
      default:
        return { admitted: false, reason: reply[0] }
    }
  }

  async settle(settlement: Settlement): Promise<SettleResult> {
    checkSettlement(settlement)
    const lease = this.leases?.shareOf(settlement.requestId)
    const reply = await this.settlements.add(`${settlement.orgId}|${settlement.month}`, lease ? { ...settlement, lease } : settlement)
    if (reply[0] === 'pending') this.leases?.endAll(settlement.orgId)
    if (lease && reply[0] !== 'loading') this.leases!.settled(settlement.requestId)
    switch (reply[0]) {
      case 'settled':
        return { outcome: 'settled', debitedMicros: settlement.costMicros, releasedMicros: BigInt(reply[1]) }
      case 'settled_unreserved':
        return { outcome: 'settled_unreserved', debitedMicros: settlement.costMicros, releasedMicros: 0n }
      default:
        return { outcome: reply[0], debitedMicros: 0n, releasedMicros: 0n }
    }
  }

  /** One admit.lua run for admissions of one organization and month. */
  private runAdmissions(requests: AdmitItem[]): Promise<AdmitReply[]> {
    const { orgId, nowMs, timeZone } = requests[0]!
    const month = billingMonth(nowMs, timeZone)
    return this.attempt(() => runAdmit(this.client, this.keys(orgId), { month, windowMs: rateWindowMs, releaseLimit: this.releaseBatch, requests }))
  }

  /** One settle.lua run for settlements of one organization and month. */
  private runSettlements(settlements: Settlement[]): Promise<SettleReply[]> {
    const { orgId, month } = settlements[0]!
    return this.attempt(() =>
      runSettle(this.client, this.keys(orgId), { month, settlements, settledRetentionMs: this.settledRetentionMs, monthTtlMs: monthCountersTtlMs, keptTtlMs: keptSettlementTtlMs }),
    )
  }

  async releaseExpired(orgId: string, nowMs: number): Promise<number> {
    checkOrgId(orgId)
    const keys = this.keys(orgId)
    let released = 0
    for (;;) {
      const batch = await this.attempt(() => runReleaseExpired(this.client, keys, nowMs, this.releaseBatch))
      released += batch
      if (batch < this.releaseBatch) return released
    }
  }

  async load(orgId: string, counters: OrgCounters): Promise<boolean> {
    checkCounters(orgId, counters)
    await this.attempt(() => runLoadCounters(this.client, this.keys(orgId), { ...counters, monthTtlMs: monthCountersTtlMs, revision: crypto.randomUUID() }))
    return true
  }

  async watchSettled(orgId: string, nowMs: number, untilMs: number): Promise<string | null> {
    checkOrgId(orgId)
    return this.attempt(() => runWatchSettled(this.client, this.keys(orgId), nowMs, untilMs, crypto.randomUUID()))
  }

  async watchedSnapshot(orgId: string, month: string, watch: string, nowMs: number): Promise<WatchedSnapshot | null> {
    checkOrgId(orgId)
    checkMonth(month)
    const reply = await this.attempt(() => runSnapshot(this.client, this.keys(orgId), month, { token: watch, nowMs }))
    if (!reply) return null
    return { ...withoutExpiredHolds(snapshotOf(reply, month), nowMs), revision: new Map(pairs(reply.account)).get('rev') ?? '', settledIds: reply.watched ?? [] }
  }

  async adjust(orgId: string, revision: string, change: OrgCounters): Promise<boolean> {
    checkChange(orgId, change)
    const reply = await this.attempt(() =>
      runAdjust(this.client, this.keys(orgId), { ...change, revision, newRevision: crypto.randomUUID(), monthTtlMs: monthCountersTtlMs, maxMicros }),
    )
    if (reply === 'out_of_range') throw new RangeError(`adjusting the counters of ${orgId} would take a balance or spend out of range; nothing was written`)
    return reply === 'adjusted'
  }

  /** The fence lives by Redis's clock (PX), so the caller's time is not needed. */
  async beginLoad(orgId: string): Promise<LoadFence | null> {
    checkOrgId(orgId)
    return this.attempt(() => runBeginLoad(this.client, this.keys(orgId), crypto.randomUUID(), this.loadFenceMs))
  }

  async finishLoad(orgId: string, counters: OrgCounters, fence: LoadFence, recordedIds: readonly string[], nowMs: number): Promise<boolean> {
    checkCounters(orgId, counters)
    return this.attempt(() =>
      runFinishLoad(this.client, this.keys(orgId), {
        ...counters,
        monthTtlMs: monthCountersTtlMs,
        token: fence.token,
        leaseFenceMs: this.leases?.leaseMs ?? 0,
        recordedIds,
        forgetAtMs: nowMs + this.settledRetentionMs,
      }),
    )
  }

  async applyLate(orgId: string, month: string, rows: readonly LateUsage[], nowMs: number, loadToken: string): Promise<LateApplied | null> {
    checkLateUsage(orgId, month, rows, nowMs)
    const keys = this.keys(orgId)
    const total = { applied: 0, debitedMicros: 0n }
    const forgetAtMs = nowMs + this.settledRetentionMs
    // In slices, so that a long list never holds Redis for long; at least one call, so that an
    // empty list still answers null for counters that are not the rebuild's, as in process.
    for (let start = 0; start === 0 || start < rows.length; start += lateRowsPerCall) {
      const slice = rows.slice(start, start + lateRowsPerCall)
      const result = await this.attempt(() => runApplyLate(this.client, keys, { loadToken, month, rows: slice, nowMs, forgetAtMs, monthTtlMs: monthCountersTtlMs }))
      if (!result) return start === 0 ? null : total
      total.applied += result.applied
      total.debitedMicros += result.debitedMicros
    }
    return total
  }

  async credit(orgId: string, amountMicros: bigint): Promise<CreditOutcome> {
    checkCredit(orgId, amountMicros)
    const [outcome] = await this.attempt(() => runCredit(this.client, this.keys(orgId), amountMicros, maxMicros))
    if (outcome === 'overflow') throw creditOverflow(orgId, amountMicros)
    return outcome
  }

  async snapshot(orgId: string, month: string, nowMs?: number): Promise<OrgSnapshot | null> {
    checkOrgId(orgId)
    checkMonth(month)
    const reply = await this.attempt(() => runSnapshot(this.client, this.keys(orgId), month))
    if (!reply) return null
    const taken = snapshotOf(reply, month)
    return nowMs === undefined ? taken : withoutExpiredHolds(taken, nowMs)
  }

  private keys(orgId: string): OrgKeys {
    return new OrgKeys(this.keyPrefix, orgId)
  }

  private async attempt<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await withDeadline(run(), this.commandTimeoutMs)
    } catch (error) {
      // What Redis holds for the leases is in doubt: admit through it until it answers again.
      this.leases?.endAll()
      throw redisFailure(error)
    }
  }
}

/** The counters a snapshot.lua reply holds. */
function snapshotOf(reply: SnapshotReply, month: string): OrgSnapshot {
  const holds = [...pairs(reply.account).filter(([field]) => field.startsWith('h|')).map(([field, record]) => [field.slice(2), record] as const), ...pairs(reply.holds)]
  const reservations: ReservationView[] = holds.map(([requestId, record]) => {
    const [amount, holdMonth, keyId, projectId, expiresAt] = record.split('|') as [string, string, string, string, string | undefined]
    return { requestId, keyId, projectId, month: holdMonth, amountMicros: BigInt(amount), expiresAtMs: expiresAt === undefined ? Number.NaN : Number(expiresAt) }
  })
  const account = new Map(pairs(reply.account))
  return {
    month,
    balanceMicros: BigInt(account.get('bal')!),
    heldMicros: BigInt(account.get('held') ?? '0'),
    keySpend: amountsUnder(reply.spend, 'k|'),
    projectSpend: amountsUnder(reply.spend, 'p|'),
    keyHeld: amountsUnder(reply.account, `k|${month}|`),
    projectHeld: amountsUnder(reply.account, `p|${month}|`),
    reservations: reservations.sort((a, b) => (a.requestId < b.requestId ? -1 : a.requestId > b.requestId ? 1 : 0)),
  }
}

function pairs(flat: string[]): [string, string][] {
  const result: [string, string][] = []
  for (let i = 0; i + 1 < flat.length; i += 2) result.push([flat[i]!, flat[i + 1]!])
  return result
}

/** The amounts of the fields that start with `prefix`, by the rest of the field name. */
function amountsUnder(flat: string[], prefix: string): Map<string, bigint> {
  return new Map(pairs(flat).filter(([field]) => field.startsWith(prefix)).map(([field, amount]) => [field.slice(prefix.length), BigInt(amount)]))
}
