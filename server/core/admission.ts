/**
 * Admission and billing counters: the port both stores implement (Redis in production, in process
 * when embedded) and the rules they share.
 *
 * Money is integer micro-EGP. The Redis scripts compare amounts as Lua numbers (doubles), so every
 * amount a store holds is an integer of magnitude below 2^53 (`maxMicros`, about 9.007 billion
 * EGP); the stores refuse larger inputs with a RangeError rather than round them.
 */
import { GatewayError } from '@nilegate/shared/errors'
import { billingMonth } from './admission-month'
import { answerWithin } from './answer-within'
import { formatEgp } from './money'

export { billingMonth, defaultBillingTimeZone } from './admission-month'

/** The RPM window: requests admitted in the last 60 s count. */
export const rateWindowMs = 60_000

/**
 * How long a settled request id is remembered, so that a replayed settlement changes nothing. The
 * gateway repeats a settle only while the first attempt's answer is outstanding (a timeout, a
 * rebuild in progress), for at most `Settlements`' retry period, so this window only has to outlast
 * that. Each remembered id costs the store memory for this long, at every request per second the
 * gateway serves: a minute at 14,000 req/s is 840,000 ids.
 */
export const defaultSettledRetentionMs = 60_000

/**
 * How long a rebuild's fence (see `AdmissionStore.beginLoad`) lasts when its rebuilder never
 * finishes: long enough for a ledger read, short enough that settlements waiting on it go on.
 */
export const defaultLoadFenceMs = 10_000

/**
 * How long settlements kept for an organization without counters wait for a rebuild. By then their
 * usage rows are in the ledger, which the rebuild reads.
 */
export const keptSettlementTtlMs = 24 * 60 * 60_000

/** The largest amount, in micro-EGP, the stores hold exactly: 2^53 - 1. */
export const maxMicros = 9_007_199_254_740_991n

/** One request asking to start: its key's rate window and the worst case of what it may cost. */
export interface AdmitRequest {
  /** Unique per request across gateways; also the id its settlement and ledger row carry. */
  requestId: string
  orgId: string
  keyId: string
  projectId: string
  /** The effective RPM limit: the strictest of plan, organization, project override and key. */
  rpmLimit: number
  /** The most the request can cost (core/hold-bound.ts): the bound of its prompt and its max output at their prices. 0 for unpriced models. */
  worstCaseMicros: bigint
  /** Monthly caps, or null when there is none. */
  keyCapMicros: bigint | null
  projectCapMicros: bigint | null
  nowMs: number
  /** How long the hold lives if the request is never settled (its gateway died): above the longest request. */
  reservationTtlMs: number
  /** The organization's billing time zone; monthly caps reset at 00:00 on the 1st there. */
  timeZone?: string
}

/** The request may start; its worst case is held until `settle` or `expiresAtMs`. */
export interface Admitted {
  admitted: true
  /** For X-RateLimit-Limit-Requests and X-RateLimit-Remaining-Requests. */
  limit: number
  remaining: number
  /**
   * Milliseconds until the oldest admission in the key's window (this one, when it is alone)
   * leaves it, and `remaining` grows by one: for X-RateLimit-Reset-Requests. 0 to 60,000.
   */
  resetMs: number
  /** The billing month (yyyymm) the request counts in: pass it to `settle`. */
  month: string
  reservedMicros: bigint
  expiresAtMs: number
}

/** The request may not start; nothing was recorded for it. */
export type Refused =
  | { admitted: false; reason: 'rate_limit_exceeded'; limit: number; retryAfterS: number }
  | { admitted: false; reason: 'quota_exceeded' | 'insufficient_balance' }
  | { admitted: false; reason: 'spending_cap_reached' | 'project_spend_cap_exceeded'; capMicros: bigint }
  /** The organization's counters are absent (new, or the store lost them): load them and retry. */
  | { admitted: false; reason: 'not_loaded' }

export type AdmitResult = Admitted | Refused

/** A refusal the client is told about (everything but `not_loaded`). */
export type ClientRefusal = Exclude<Refused, { reason: 'not_loaded' }>

/** What an admitted request finally cost. */
export interface Settlement {
  requestId: string
  orgId: string
  keyId: string
  projectId: string
  /** `Admitted.month`: the month whose caps the spend counts against. */
  month: string
  /** The cost billed; the gateway bills no more than the hold (`InferenceCall.record`), and a store debits what it is given. */
  costMicros: bigint
  nowMs: number
}

/**
 * - `settled`: the hold was released and the cost debited.
 * - `settled_unreserved`: the cost was debited, there was no hold to release (it expired and was
 *   released, or the counters were rebuilt since admission).
 * - `already_settled`: nothing changed; this request id was settled (or kept) before.
 * - `pending`: the counters are absent; the settlement is kept, and the next rebuild applies it
 *   unless the ledger it reads already has the request's usage row.
 * - `loading`: nothing changed; a rebuild is reading the ledger. Settle again shortly.
 */
export type SettleOutcome = 'settled' | 'settled_unreserved' | 'already_settled' | 'pending' | 'loading'

export interface SettleResult {
  outcome: SettleOutcome
  debitedMicros: bigint
  /** The hold given back (the reservation), 0 when there was none. */
  releasedMicros: bigint
}

/** Counters of one organization as the ledger knows them: used to seed or rebuild a store. */
export interface OrgCounters {
  /** The month (yyyymm) the spends are for. */
  month: string
  /** Credits minus settled debits. */
  balanceMicros: bigint
  keySpend: ReadonlyMap<string, bigint>
  projectSpend: ReadonlyMap<string, bigint>
}

export interface ReservationView {
  requestId: string
  keyId: string
  projectId: string
  month: string
  amountMicros: bigint
  expiresAtMs: number
}

/** An organization's counters at one instant, for tests and the reconciler. */
export interface OrgSnapshot {
  month: string
  /** Settled balance: credits minus settled debits; holds are not subtracted. */
  balanceMicros: bigint
  /** Sum of open holds. */
  heldMicros: bigint
  /** Settled spend in `month`. */
  keySpend: Map<string, bigint>
  projectSpend: Map<string, bigint>
  /** Open holds counted against `month`'s caps. */
  keyHeld: Map<string, bigint>
  projectHeld: Map<string, bigint>
  /** Every open hold, by request id. */
  reservations: ReservationView[]
}

/** An organization's counters with what a watch recorded, read at one instant. */
export interface WatchedSnapshot extends OrgSnapshot {
  /** Names this state of the counters: a repair computed from it applies only while it lasts. */
  revision: string
  /** Requests settled, and late rows applied, since the watch began. */
  settledIds: string[]
}

/**
 * Atomic admission counters shared by every gateway of a deployment. Time is always passed in.
 * A settled request id is remembered for the store's settled-retention period: a replay within it
 * is a no-op.
 */
export interface AdmissionStore {
  /**
   * One atomic step: the key's sliding window at `rpmLimit`, then a hold of `worstCaseMicros`
   * against the balance, the key's and the project's monthly caps; all or nothing. Checked in that
   * order: rate limit, balance (`quota_exceeded` when it is <= 0, `insufficient_balance` when the
   * worst case exceeds what is not held), key cap, project cap. Expired holds are released first.
   */
  admit(request: AdmitRequest): Promise<AdmitResult>
  /** Releases the hold and debits the actual cost, exactly once per request id. */
  settle(settlement: Settlement): Promise<SettleResult>
  /** Releases every hold of the organization that expired by `nowMs`; returns how many. */
  releaseExpired(orgId: string, nowMs: number): Promise<number>
  /**
   * Sets the balance and `month`'s spends as given (open holds stay) and forgets kept settlements:
   * seeding counters, as the tests do (the reconciler repairs with `adjust`, which keeps what
   * settles meanwhile). The counters are then no rebuild's (`applyLate`), get a new revision, and a
   * watch ends. Returns true.
   */
  load(orgId: string, counters: OrgCounters): Promise<boolean>
  /**
   * Starts rebuilding counters that are absent: null when they are loaded. Otherwise sets a fence
   * (or joins the one another rebuilder set), while which settlements answer `loading` instead of
   * being kept, and returns it with the ids of the settlements kept so far. Read the ledger, and
   * which of those ids it records, in one snapshot; then `finishLoad`.
   */
  beginLoad(orgId: string, nowMs: number): Promise<LoadFence | null>
  /**
   * Loads `counters` read from the ledger and applies every kept settlement whose id is not in
   * `recordedIds` (its usage row was not in the read), all at once. Writes nothing and answers
   * false when the counters are loaded meanwhile (another rebuilder) or the fence is gone (it
   * expired, or a credit arrived whose ledger row the read may have missed): begin again.
   */
  finishLoad(orgId: string, counters: OrgCounters, fence: LoadFence, recordedIds: readonly string[], nowMs: number): Promise<boolean>
  /**
   * The counters for `month`, or null when none are loaded. With `nowMs`, as they stand then: a
   * hold that expired by `nowMs` is neither listed nor counted in the held amounts, although the
   * store releases it only at the next admission or `releaseExpired` (the balance API must not show
   * a dead gateway's holds as unavailable until the organization sends traffic). Without it, every
   * hold not yet released.
   */
  snapshot(orgId: string, month: string, nowMs?: number): Promise<OrgSnapshot | null>
  /**
   * Starts recording the ids of the requests the organization's counters settle, and of the late
   * rows `applyLate` debits, until `untilMs`, for `watchedSnapshot`: the reconciler's way to tell
   * which usage rows on their way to the ledger the counters hold already. A watch that is running
   * is joined and lasts until the later of the two ends (the first snapshot ends it for both: the
   * other reconciler's look is then left for later). Returns its token; null, nothing written,
   * when the counters are absent.
   */
  watchSettled(orgId: string, nowMs: number, untilMs: number): Promise<string | null>
  /**
   * The counters for `month` at `nowMs` (as `snapshot` with `nowMs`), their revision and the ids
   * the watch recorded, read at one instant; the watch ends. Null, nothing written, when the counters are absent, or the watch ended by
   * `nowMs` or was begun anew since (the ids it recorded would be incomplete).
   */
  watchedSnapshot(orgId: string, month: string, watch: string, nowMs: number): Promise<WatchedSnapshot | null>
  /**
   * Adds `change` to the balance and to `change.month`'s spends, if the counters are still at
   * `revision` (`WatchedSnapshot.revision`): the reconciler's repair, which keeps what was settled
   * since it read them. The counters get a new revision and are then no rebuild's (`applyLate`).
   * False, with nothing written, when the revision moved or the counters are absent: every change
   * whose ledger row the repair's read may have counted gives a new revision (another repair, a
   * load, a rebuild, a credit, late rows applied); settlements do not (their rows follow them). A RangeError, with nothing written, when a result would leave the
   * range of `load`'s counters.
   */
  adjust(orgId: string, revision: string, change: OrgCounters): Promise<boolean>
  /**
   * Adds a credit the ledger already records (an operator's top-up) to the loaded balance, atomically
   * with admissions. Answers `not_loaded` when the organization's counters are absent: rebuilding
   * them from the ledger counts the credit (a rebuild in progress is fenced off, so it reads the
   * ledger again). A RangeError, with nothing written, when the balance would exceed `maxMicros`.
   */
  credit(orgId: string, amountMicros: bigint): Promise<CreditOutcome>
  /**
   * Debits usage rows that the ledger read of the rebuild fenced by `loadToken` (`LoadFence.token`)
   * did not hold (`LateUsageReader`), unless their requests were settled in these counters since;
   * each applied id is remembered as settled, so a repeat changes nothing. Spends count the rows of
   * `month` only. Null, with nothing written, when the counters are not that rebuild's: absent
   * (their rebuild reads the rows), rebuilt again, or changed by `load` or `adjust` since (a
   * repair counted the rows its ledger read held; those written later, the reconciler's next
   * passes find).
   */
  applyLate(orgId: string, month: string, rows: readonly LateUsage[], nowMs: number, loadToken: string): Promise<LateApplied | null>
}

export type CreditOutcome = 'credited' | 'not_loaded'

/** A rebuild in progress: its fence, and the settlements kept while the counters were absent. */
export interface LoadFence {
  token: string
  keptIds: string[]
}

/** What a rebuild reads from the ledger, in one snapshot. */
export interface LedgerCounters extends OrgCounters {
  /** Which of the request ids asked about have usage rows. */
  recordedIds: string[]
  /** Names the read's snapshot, for `LateUsageReader`; absent where the ledger cannot say. */
  snapshot?: string
}

/** A usage row the rebuild's ledger read did not hold: its cost may be in neither the read nor the store. */
export interface LateUsage {
  requestId: string
  keyId: string
  projectId: string
  /** yyyymm of the row's creation in the organization's time zone. */
  month: string
  costMicros: bigint
}

/** What `applyLate` did: the rows it debited (the others were settled in the store already), and their sum. */
export interface LateApplied {
  applied: number
  debitedMicros: bigint
}

// Ids become parts of store keys and records: no separators, braces or spaces.
const idPattern = /^[A-Za-z0-9_.:-]{1,128}$/
const monthPattern = /^\d{4}(0[1-9]|1[0-2])$/

function checkId(name: string, value: string): void {
  if (!idPattern.test(value)) throw new RangeError(`${name} must be 1-128 characters of [A-Za-z0-9_.:-]: ${JSON.stringify(value)}`)
}

function checkMicros(name: string, value: bigint, { signed = false } = {}): void {
  if (value > maxMicros || value < (signed ? -maxMicros : 0n)) throw new RangeError(`${name} must be ${signed ? 'within ±' : 'between 0 and '}${maxMicros} micro-EGP: ${value}`)
}

function checkMs(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer of milliseconds: ${value}`)
}

export function checkOrgId(orgId: string): void {
  checkId('orgId', orgId)
}

export function checkMonth(month: string): void {
  if (!monthPattern.test(month)) throw new RangeError(`month must be yyyymm: ${JSON.stringify(month)}`)
}

/** Throws a RangeError for a request the stores cannot hold exactly. */
export function checkAdmitRequest(request: AdmitRequest): void {
  checkId('requestId', request.requestId)
  checkId('orgId', request.orgId)
  checkId('keyId', request.keyId)
  checkId('projectId', request.projectId)
  if (!Number.isSafeInteger(request.rpmLimit) || request.rpmLimit < 1) throw new RangeError(`rpmLimit must be a positive integer: ${request.rpmLimit}`)
  checkMicros('worstCaseMicros', request.worstCaseMicros)
  if (request.keyCapMicros !== null) checkMicros('keyCapMicros', request.keyCapMicros)
  if (request.projectCapMicros !== null) checkMicros('projectCapMicros', request.projectCapMicros)
  checkMs('nowMs', request.nowMs)
  if (!Number.isSafeInteger(request.reservationTtlMs) || request.reservationTtlMs < 1) throw new RangeError(`reservationTtlMs must be a positive integer: ${request.reservationTtlMs}`)
}

export function checkSettlement(settlement: Settlement): void {
  checkId('requestId', settlement.requestId)
  checkId('orgId', settlement.orgId)
  checkId('keyId', settlement.keyId)
  checkId('projectId', settlement.projectId)
  checkMonth(settlement.month)
  checkMicros('costMicros', settlement.costMicros)
  checkMs('nowMs', settlement.nowMs)
}

/** Throws a RangeError for late usage rows the stores cannot hold exactly. */
export function checkLateUsage(orgId: string, month: string, rows: readonly LateUsage[], nowMs: number): void {
  checkId('orgId', orgId)
  checkMonth(month)
  checkMs('nowMs', nowMs)
  for (const row of rows) {
    checkId('requestId', row.requestId)
    checkId('keyId', row.keyId)
    checkId('projectId', row.projectId)
    checkMonth(row.month)
    checkMicros('costMicros', row.costMicros)
  }
}

/** A credit is positive and within what the stores hold exactly. */
export function checkCredit(orgId: string, amountMicros: bigint): void {
  checkId('orgId', orgId)
  if (amountMicros <= 0n) throw new RangeError(`a credit must be positive: ${amountMicros}`)
  checkMicros('amountMicros', amountMicros)
}

/** The RangeError of a credit that would take a balance past `maxMicros`. */
export function creditOverflow(orgId: string, amountMicros: bigint): RangeError {
  return new RangeError(`crediting ${amountMicros} micro-EGP to ${orgId} would take its balance above ${maxMicros}`)
}

export function checkCounters(orgId: string, counters: OrgCounters): void {
  checkAmounts(orgId, counters, '')
}

/** Checks the ids of a change (`AdmissionStore.adjust`) and that each amount is within ±(2^53 - 1). */
export function checkChange(orgId: string, change: OrgCounters): void {
  checkAmounts(orgId, change, ' change')
}

/** Spends are signed in a change (`what` is ' change'), from 0 in counters (''). */
function checkAmounts(orgId: string, amounts: OrgCounters, what: '' | ' change'): void {
  const signed = what !== ''
  checkId('orgId', orgId)
  checkMonth(amounts.month)
  checkMicros(`balanceMicros${what}`, amounts.balanceMicros, { signed: true })
  for (const [keyId, spend] of amounts.keySpend) {
    checkId('keyId', keyId)
    checkMicros(`keySpend${what} of ${keyId}`, spend, { signed })
  }
  for (const [projectId, spend] of amounts.projectSpend) {
    checkId('projectId', projectId)
    checkMicros(`projectSpend${what} of ${projectId}`, spend, { signed })
  }
}

/**
 * Checks that `change` applied to `current` stays within the range of `load`'s counters: a
 * balance within ±(2^53 - 1), spends between 0 and 2^53 - 1.
 */
export function checkAdjustment(orgId: string, current: OrgCounters, change: OrgCounters): void {
  checkCounters(orgId, {
    month: change.month,
    balanceMicros: current.balanceMicros + change.balanceMicros,
    keySpend: new Map([...change.keySpend].map(([keyId, amount]) => [keyId, (current.keySpend.get(keyId) ?? 0n) + amount])),
    projectSpend: new Map([...change.projectSpend].map(([projectId, amount]) => [projectId, (current.projectSpend.get(projectId) ?? 0n) + amount])),
  })
}

/**
 * The snapshot as it stands at `nowMs`: the holds that expired by then are taken out of the list
 * and of the held amounts. A hold whose expiry is unknown (NaN: written before holds kept one)
 * counts as expired, as the stores release it. Admission needs none of this: it releases expired
 * holds before it decides.
 */
export function withoutExpiredHolds<Snapshot extends OrgSnapshot>(snapshot: Snapshot, nowMs: number): Snapshot {
  if (snapshot.reservations.every((hold) => hold.expiresAtMs > nowMs)) return snapshot
  const keyHeld = new Map(snapshot.keyHeld)
  const projectHeld = new Map(snapshot.projectHeld)
  let heldMicros = snapshot.heldMicros
  for (const hold of snapshot.reservations) {
    if (hold.expiresAtMs > nowMs) continue
    heldMicros -= hold.amountMicros
    if (hold.month !== snapshot.month) continue
    subtractHeld(keyHeld, hold.keyId, hold.amountMicros)
    subtractHeld(projectHeld, hold.projectId, hold.amountMicros)
  }
  return { ...snapshot, heldMicros, keyHeld, projectHeld, reservations: snapshot.reservations.filter((hold) => hold.expiresAtMs > nowMs) }
}

/** Takes `amount` off `id`'s held amount, leaving out the zeros as the stores do. */
function subtractHeld(held: Map<string, bigint>, id: string, amount: bigint): void {
  const left = (held.get(id) ?? 0n) - amount
  if (left > 0n) held.set(id, left)
  else held.delete(id)
}

/** Milliseconds until an entry admitted at `admittedAtMs` leaves the window: 0 to 60,000. */
export function resetMilliseconds(admittedAtMs: number, nowMs: number): number {
  return Math.min(rateWindowMs, Math.max(0, admittedAtMs + rateWindowMs - nowMs))
}

/** Whole seconds until an entry admitted at `admittedAtMs` leaves the window: 1 to 60. */
export function retryAfterSeconds(admittedAtMs: number, nowMs: number): number {
  return Math.min(60, Math.max(1, Math.ceil((admittedAtMs + rateWindowMs - nowMs) / 1000)))
}

/** What the money checks of `admit` look at; spends and holds are the current month's. */
export interface MoneyPosition {
  worstCaseMicros: bigint
  balanceMicros: bigint
  heldMicros: bigint
  keyCapMicros: bigint | null
  keySpentMicros: bigint
  keyHeldMicros: bigint
  projectCapMicros: bigint | null
  projectSpentMicros: bigint
  projectHeldMicros: bigint
}

/**
 * The money refusal for a request, or null when its worst case fits everywhere. An unpriced request
 * (worst case 0) is never refused for money. admit.lua applies the same rules.
 */
export function moneyRefusal(position: MoneyPosition): ClientRefusal | null {
  const worst = position.worstCaseMicros
  if (worst === 0n) return null
  if (position.balanceMicros <= 0n) return { admitted: false, reason: 'quota_exceeded' }
  if (worst > position.balanceMicros - position.heldMicros) return { admitted: false, reason: 'insufficient_balance' }
  const keyCap = position.keyCapMicros
  if (keyCap !== null && worst > keyCap - position.keySpentMicros - position.keyHeldMicros) return { admitted: false, reason: 'spending_cap_reached', capMicros: keyCap }
  const projectCap = position.projectCapMicros
  if (projectCap !== null && worst > projectCap - position.projectSpentMicros - position.projectHeldMicros) return { admitted: false, reason: 'project_spend_cap_exceeded', capMicros: projectCap }
  return null
}

/** The error the client gets for a refusal, with its message and Retry-After. */
export function refusalError(refusal: ClientRefusal): GatewayError {
  switch (refusal.reason) {
    case 'rate_limit_exceeded':
      return new GatewayError('rate_limit_exceeded', `Rate limit reached: ${refusal.limit} requests per minute for this key. Retry after ${refusal.retryAfterS} s.`, null, refusal.retryAfterS)
    case 'spending_cap_reached':
      return new GatewayError('spending_cap_reached', `This API key has reached its monthly spend cap of ${formatEgp(refusal.capMicros)} EGP.`)
    case 'project_spend_cap_exceeded':
      return new GatewayError('project_spend_cap_exceeded', `The project has reached its monthly spend cap of ${formatEgp(refusal.capMicros)} EGP.`)
    default:
      return new GatewayError(refusal.reason)
  }
}

/** Reads the ledger for a rebuild: the counters of `month`, and which of `requestIds` have usage rows. */
export type ReadLedger = (orgId: string, month: string, requestIds: readonly string[]) => Promise<LedgerCounters>

/**
 * Rebuilds an organization's absent counters from the ledger, applying the settlements the store
 * kept meanwhile whose usage rows the read did not hold. Returns false when they were loaded
 * already, or the rebuild was fenced off (try again).
 */
export async function rebuildCounters(store: AdmissionStore, orgId: string, month: string, now: () => number, readLedger: ReadLedger, loaded?: LoadedFromLedger): Promise<boolean> {
  const fence = await store.beginLoad(orgId, now())
  if (!fence) return false
  const readAtMs = now()
  const read = await readLedger(orgId, month, fence.keptIds)
  const { recordedIds, ...counters } = read
  const finished = await store.finishLoad(orgId, counters, fence, recordedIds, now())
  if (finished) loaded?.(read, readAtMs, fence.token)
  return finished
}

/** Told when a rebuild loaded counters: what it read, when the read began, and the rebuild's fence token. */
export type LoadedFromLedger = (read: LedgerCounters, readAtMs: number, loadToken: string) => void

// Rebuilds an admission may try before it gives up with service_unavailable: each one that loses
// its fence was interrupted by a credit, which is rare.
const rebuildAttempts = 3

/** How `admitLoaded` rebuilds absent counters and how long it waits for them. */
export interface AdmitLoadedOptions {
  /** Times the rebuild; Date.now when absent. */
  now?: () => number
  /** Hears of a rebuild that loaded. */
  loaded?: LoadedFromLedger
  /**
   * How long the admission waits for the counters to be rebuilt before it rejects with
   * NoAnswerInTime; the rebuild goes on for the admissions after it. No limit when absent.
   */
  waitMs?: number
}

interface RunningRebuild {
  startedAtMs: number
  done: Promise<boolean>
}

/** The rebuilds this process runs, by store, then organization and month. */
const runningRebuilds = new WeakMap<AdmissionStore, Map<string, RunningRebuild>>()

/**
 * The rebuild of the organization's counters that this process is running, joined, or a new one.
 * After Redis lost its data, every request in flight finds its organization's counters absent:
 * without this each would read the organization's ledger, all at once. A rebuild running for
 * longer than `waitMs` is not joined: it may hang on a database that stopped answering, and the
 * admissions after it should try again rather than wait on it.
 */
function joinRebuild(store: AdmissionStore, orgId: string, month: string, waitMs: number, start: () => Promise<boolean>): Promise<boolean> {
  let running = runningRebuilds.get(store)
  if (!running) runningRebuilds.set(store, (running = new Map()))
  const key = `${orgId}|${month}`
  const current = running.get(key)
  if (current && performance.now() - current.startedAtMs < waitMs) return current.done
  const rebuild: RunningRebuild = { startedAtMs: performance.now(), done: start() }
  running.set(key, rebuild)
  const forget = () => {
    if (running.get(key) === rebuild) running.delete(key)
  }
  rebuild.done.then(forget, forget)
  return rebuild.done
}

/**
 * Admits, rebuilding the organization's counters when the store has none (a new organization, or
 * Redis lost its data). The admissions of one organization in this process share one rebuild,
 * which outlives an admission that stops waiting for it (`waitMs`). When two gateways rebuild at
 * once, they share a fence and the first load wins. Still not loaded after a few rebuilds:
 * service_unavailable.
 */
export async function admitLoaded(store: AdmissionStore, request: AdmitRequest, readLedger: ReadLedger, options: AdmitLoadedOptions = {}): Promise<Admitted | ClientRefusal> {
  const { now = Date.now, loaded, waitMs = Number.POSITIVE_INFINITY } = options
  const month = billingMonth(request.nowMs, request.timeZone)
  let waitingSinceMs: number | undefined
  for (let attempt = 0; attempt <= rebuildAttempts; attempt++) {
    const result = await store.admit(request)
    if (result.admitted || result.reason !== 'not_loaded') return result
    if (attempt === rebuildAttempts) break
    waitingSinceMs ??= performance.now()
    const rebuild = joinRebuild(store, request.orgId, month, waitMs, () => rebuildCounters(store, request.orgId, month, now, readLedger, loaded))
    await (Number.isFinite(waitMs) ? answerWithin(rebuild, Math.max(0, waitMs - (performance.now() - waitingSinceMs)), 'the ledger') : rebuild)
  }
  throw new GatewayError('service_unavailable')
}
