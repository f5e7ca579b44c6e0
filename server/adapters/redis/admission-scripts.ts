/**
 * The admission scripts and one typed wrapper each: the only place that knows their KEYS and ARGV
 * positions (documented in each .lua header).
 */
import type { LateUsage } from '../../core/admission'
import type { RedisConnection } from './connect-redis'
import { RedisScript } from './redis-script'
import adjustSource from './scripts/adjust.lua' with { type: 'text' }
import admitSource from './scripts/admit.lua' with { type: 'text' }
import applyLateSource from './scripts/apply-late.lua' with { type: 'text' }
import beginLoadSource from './scripts/begin-load.lua' with { type: 'text' }
import creditSource from './scripts/credit.lua' with { type: 'text' }
import finishLoadSource from './scripts/finish-load.lua' with { type: 'text' }
import holdsSource from './scripts/holds.lua' with { type: 'text' }
import loadCountersSource from './scripts/load-counters.lua' with { type: 'text' }
import releaseExpiredSource from './scripts/release-expired.lua' with { type: 'text' }
import endLeasesSource from './scripts/end-leases.lua' with { type: 'text' }
import settleSource from './scripts/settle.lua' with { type: 'text' }
import snapshotSource from './scripts/snapshot.lua' with { type: 'text' }
import watchSettledSource from './scripts/watch-settled.lua' with { type: 'text' }

const admitScript = new RedisScript('admit', `${holdsSource}\n${admitSource}`)
const settleScript = new RedisScript('settle', `${holdsSource}\n${settleSource}`)
const releaseExpiredScript = new RedisScript('release-expired', `${holdsSource}\n${releaseExpiredSource}`)
const endLeasesScript = new RedisScript('end-leases', `${holdsSource}\n${endLeasesSource}`)
const loadCountersScript = new RedisScript('load-counters', loadCountersSource)
const snapshotScript = new RedisScript('snapshot', snapshotSource)
const creditScript = new RedisScript('credit', creditSource)
const beginLoadScript = new RedisScript('begin-load', beginLoadSource)
const finishLoadScript = new RedisScript('finish-load', `${holdsSource}\n${finishLoadSource}`)
const applyLateScript = new RedisScript('apply-late', `${holdsSource}\n${applyLateSource}`)
const watchSettledScript = new RedisScript('watch-settled', watchSettledSource)
const adjustScript = new RedisScript('adjust', `${holdsSource}\n${adjustSource}`)

export const admissionScripts: readonly RedisScript[] = [
  admitScript,
  settleScript,
  releaseExpiredScript,
  endLeasesScript,
  loadCountersScript,
  snapshotScript,
  creditScript,
  beginLoadScript,
  finishLoadScript,
  applyLateScript,
  watchSettledScript,
  adjustScript,
]

/**
 * The keys of one organization. All carry the hash tag {o:<orgId>}, so every script touches one
 * Redis Cluster slot. The balance, the held totals and the open holds share one hash, and a
 * month's settled spends another, so that a script reads what it checks with one HMGET each and a
 * load replaces a month at once.
 */
export class OrgKeys {
  readonly account: string
  /** Where versions before kept the holds, now fields of the account (holds.lua); read until moved. */
  readonly legacyHolds: string
  readonly settled: string
  readonly fence: string
  readonly kept: string
  readonly watch: string
  /** Set for a lease's length after a rebuild: admissions wait it out (admit.lua). */
  readonly leaseFence: string
  private readonly base: string

  constructor(prefix: string, orgId: string) {
    this.base = `${prefix}{o:${orgId}}:`
    this.account = `${this.base}acct`
    this.legacyHolds = `${this.base}res`
    this.settled = `${this.base}done`
    this.fence = `${this.base}fence`
    this.kept = `${this.base}kept`
    this.watch = `${this.base}watch`
    this.leaseFence = `${this.base}lfence`
  }

  spend(month: string): string {
    return `${this.base}spend:${month}`
  }

  window(keyId: string): string {
    return `${this.base}k:${keyId}:win`
  }
}

export interface AdmitParams {
  /** The month of every request. */
  month: string
  windowMs: number
  releaseLimit: number
  requests: ReadonlyArray<{
    requestId: string
    keyId: string
    projectId: string
    nowMs: number
    rpmLimit: number
    worstCaseMicros: bigint
    keyCapMicros: bigint | null
    projectCapMicros: bigint | null
    /** The hold expires this long after `nowMs`. */
    reservationTtlMs: number
    /** The requests of its key a lease for it would admit (1: this one alone), and when the lease would end. */
    /** Absent: 1 and none (the request alone). */
    slots?: number
    leaseEndMs?: number
  }>
}

export type AdmitReply =
  /** Remaining places in the window, ms until its oldest entry leaves it, and the slots granted (1: this request alone). */
  | ['admitted', number, number, number]
  /** Admitted under the lease (its id) granted to an earlier request of the run; remaining and reset as above. */
  | ['leased', string, number, number]
  | ['rate_limit_exceeded', number]
  /** Counters rebuilt within a lease's length: admit again once this many ms have passed. */
  | ['fenced', number]
  | ['quota_exceeded' | 'insufficient_balance' | 'spending_cap_reached' | 'project_spend_cap_exceeded' | 'not_loaded' | 'duplicate']

/** Admits requests of one organization and month in one script run; one reply each, in order. */
export async function runAdmit(client: RedisConnection, keys: OrgKeys, p: AdmitParams): Promise<AdmitReply[]> {
  // Each key's window once in KEYS, after the four the script always uses.
  const windows = new Map<string, number>()
  const args = [p.month, String(p.windowMs), String(p.releaseLimit)]
  for (const r of p.requests) {
    let index = windows.get(r.keyId)
    if (index === undefined) windows.set(r.keyId, (index = 5 + windows.size))
    const keyCap = r.keyCapMicros === null ? '' : String(r.keyCapMicros)
    const projectCap = r.projectCapMicros === null ? '' : String(r.projectCapMicros)
    args.push(r.requestId, r.keyId, r.projectId, String(r.nowMs), String(r.rpmLimit), String(r.worstCaseMicros), keyCap, projectCap, String(r.nowMs + r.reservationTtlMs), String(index), String(r.slots ?? 1), String(r.leaseEndMs ?? r.nowMs))
  }
  const windowKeys = Array.from(windows.keys(), (keyId) => keys.window(keyId))
  const reply = await admitScript.run(client, [keys.account, keys.spend(p.month), keys.legacyHolds, keys.leaseFence, ...windowKeys], args)
  return reply as AdmitReply[]
}

export interface SettleParams {
  /** The month every settlement was admitted in. */
  month: string
  /** `lease`: the lease the request was admitted under, and its worst case then: its share of the lease's hold. */
  settlements: ReadonlyArray<{ requestId: string; keyId: string; projectId: string; costMicros: bigint; nowMs: number; lease?: { id: string; shareMicros: bigint } }>
  /** A settled id is forgotten this long after its settlement's `nowMs`. */
  settledRetentionMs: number
  monthTtlMs: number
  keptTtlMs: number
}

export type SettleReply = ['settled', string] | ['settled_unreserved' | 'already_settled' | 'pending' | 'loading']

/** Settles requests of one organization and month in one script run; one reply each, in order. */
export async function runSettle(client: RedisConnection, keys: OrgKeys, p: SettleParams): Promise<SettleReply[]> {
  const args = [p.month, String(p.monthTtlMs), String(p.keptTtlMs)]
  for (const s of p.settlements) args.push(s.requestId, s.keyId, s.projectId, String(s.costMicros), String(s.nowMs), String(s.nowMs + p.settledRetentionMs), s.lease?.id ?? '', String(s.lease?.shareMicros ?? 0n))
  const reply = await settleScript.run(client, [keys.account, keys.spend(p.month), keys.legacyHolds, keys.settled, keys.fence, keys.kept, keys.watch], args)
  return reply as SettleReply[]
}

/** A lease that admits no more (end-leases.lua). */
export interface LeaseEnd {
  orgId: string
  leaseId: string
  keyId: string
  slots: number
  /** What no request took of its hold. */
  unusedMicros: bigint
  /** When each slot after the first (the asking request's) was taken: as many as were. */
  takenAtMs: readonly number[]
}

/** Ends leases of one organization; returns how many had a hold to release from. */
export async function runEndLeases(client: RedisConnection, keys: OrgKeys, leases: readonly LeaseEnd[]): Promise<number> {
  const windows = new Map<string, number>()
  const args: string[] = []
  for (const lease of leases) {
    let index = windows.get(lease.keyId)
    if (index === undefined) windows.set(lease.keyId, (index = 2 + windows.size))
    args.push(lease.leaseId, String(index), String(lease.slots), String(lease.unusedMicros), String(lease.takenAtMs.length + 1), ...lease.takenAtMs.map(String))
  }
  const windowKeys = Array.from(windows.keys(), (keyId) => keys.window(keyId))
  return (await endLeasesScript.run(client, [keys.account, ...windowKeys], args)) as number
}

/** Releases up to `limit` expired holds; returns how many it released. */
export async function runReleaseExpired(client: RedisConnection, keys: OrgKeys, nowMs: number, limit: number): Promise<number> {
  const reply = await releaseExpiredScript.run(client, [keys.account, keys.legacyHolds], [String(nowMs), String(limit)])
  return reply as number
}

export interface LoadCountersParams {
  month: string
  balanceMicros: bigint
  keySpend: ReadonlyMap<string, bigint>
  projectSpend: ReadonlyMap<string, bigint>
  monthTtlMs: number
}

/** The month hash's field, spend pairs, as the load scripts take them. */
function spendPairs(p: LoadCountersParams): string[] {
  const pairs: string[] = []
  for (const [keyId, spend] of p.keySpend) pairs.push(`k|${keyId}`, String(spend))
  for (const [projectId, spend] of p.projectSpend) pairs.push(`p|${projectId}`, String(spend))
  return pairs
}

export async function runLoadCounters(client: RedisConnection, keys: OrgKeys, p: LoadCountersParams & { revision: string }): Promise<void> {
  await loadCountersScript.run(client, [keys.account, keys.spend(p.month), keys.kept], [String(p.balanceMicros), String(p.monthTtlMs), p.revision, ...spendPairs(p)])
}

/** The watch's token, or null when the counters are absent. */
export async function runWatchSettled(client: RedisConnection, keys: OrgKeys, nowMs: number, untilMs: number, token: string): Promise<string | null> {
  const reply = await watchSettledScript.run(client, [keys.account, keys.watch], [String(nowMs), String(untilMs), token])
  return (reply as string | null) ?? null
}

export interface AdjustParams extends LoadCountersParams {
  revision: string
  newRevision: string
  maxMicros: bigint
}

export type AdjustReply = 'adjusted' | 'stale' | 'out_of_range'

export async function runAdjust(client: RedisConnection, keys: OrgKeys, p: AdjustParams): Promise<AdjustReply> {
  const args = [p.revision, p.newRevision, String(p.balanceMicros), String(p.monthTtlMs), String(p.maxMicros), ...spendPairs(p)]
  const reply = (await adjustScript.run(client, [keys.account, keys.spend(p.month)], args)) as number
  return reply === 1 ? 'adjusted' : reply === 0 ? 'stale' : 'out_of_range'
}

/** The fence's token and the kept settlements' ids, or null when the counters are loaded. */
export async function runBeginLoad(client: RedisConnection, keys: OrgKeys, token: string, fenceMs: number): Promise<{ token: string; keptIds: string[] } | null> {
  const reply = (await beginLoadScript.run(client, [keys.account, keys.fence, keys.kept], [token, String(fenceMs)])) as string[]
  if (reply.length === 0) return null
  const [current, ...keptIds] = reply as [string, ...string[]]
  return { token: current, keptIds }
}

export interface FinishLoadParams extends LoadCountersParams {
  token: string
  /** How long admissions wait once loaded: the leases' length (0: none). */
  leaseFenceMs: number
  recordedIds: readonly string[]
  forgetAtMs: number
}

/** Returns whether it loaded. */
export async function runFinishLoad(client: RedisConnection, keys: OrgKeys, p: FinishLoadParams): Promise<boolean> {
  const args = [p.token, String(p.balanceMicros), p.month, String(p.monthTtlMs), String(p.forgetAtMs), String(p.leaseFenceMs), String(p.recordedIds.length), ...p.recordedIds, ...spendPairs(p)]
  const reply = await finishLoadScript.run(client, [keys.account, keys.spend(p.month), keys.fence, keys.kept, keys.settled, keys.leaseFence], args)
  return reply === 1
}

export interface ApplyLateParams {
  loadToken: string
  month: string
  rows: readonly LateUsage[]
  nowMs: number
  forgetAtMs: number
  monthTtlMs: number
}

/** The rows applied and the micro-EGP debited, or null when the counters are absent or not the rebuild's. */
export async function runApplyLate(client: RedisConnection, keys: OrgKeys, p: ApplyLateParams): Promise<{ applied: number; debitedMicros: bigint } | null> {
  const args = [p.month, String(p.nowMs), String(p.forgetAtMs), String(p.monthTtlMs), p.loadToken, crypto.randomUUID()]
  for (const row of p.rows) args.push(row.requestId, String(row.costMicros), row.month, row.keyId, row.projectId)
  const reply = (await applyLateScript.run(client, [keys.account, keys.spend(p.month), keys.settled, keys.watch], args)) as [number, string] | []
  if (reply.length === 0) return null
  return { applied: reply[0], debitedMicros: BigInt(reply[1]) }
}

export type CreditReply = ['credited', string] | ['not_loaded' | 'overflow']

export async function runCredit(client: RedisConnection, keys: OrgKeys, amountMicros: bigint, maxBalanceMicros: bigint): Promise<CreditReply> {
  const reply = await creditScript.run(client, [keys.account, keys.fence], [String(amountMicros), String(maxBalanceMicros), crypto.randomUUID()])
  return reply as CreditReply
}

export interface SnapshotReply {
  /** Flat field/value lists, as HGETALL answers; the holds are the account's `h|<requestId>` fields. */
  account: string[]
  spend: string[]
  /** Holds where versions before kept them, until a release moves them: flat requestId/record list. */
  holds: string[]
  /** The ids the watch recorded, when asked with one. */
  watched?: string[]
}

/** Null when the counters are absent, or `watch` (token and now ms) ended or is another's. */
export async function runSnapshot(client: RedisConnection, keys: OrgKeys, month: string, watch?: { token: string; nowMs: number }): Promise<SnapshotReply | null> {
  const snapshotKeys = [keys.account, keys.spend(month), keys.legacyHolds]
  const reply = (await (watch ? snapshotScript.run(client, [...snapshotKeys, keys.watch], [watch.token, String(watch.nowMs)]) : snapshotScript.run(client, snapshotKeys, []))) as string[][]
  if (reply.length === 0) return null
  const [account, spend, holds, watched] = reply as [string[], string[], string[], string[] | undefined]
  return { account, spend, holds, watched }
}
