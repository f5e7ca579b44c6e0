import {
  billingMonth,
  checkAdjustment,
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
  moneyRefusal,
  keptSettlementTtlMs,
  rateWindowMs,
  resetMilliseconds,
  retryAfterSeconds,
  type AdmissionStore,
  type AdmitRequest,
  type AdmitResult,
  type CreditOutcome,
  type LateApplied,
  type LateUsage,
  type LoadFence,
  type OrgCounters,
  type OrgSnapshot,
  type SettleResult,
  type Settlement,
  type WatchedSnapshot,
  withoutExpiredHolds,
} from '../../core/admission'
import { RecentIds } from './recent-ids'

interface Hold {
  keyId: string
  projectId: string
  month: string
  amount: bigint
  expiresAtMs: number
}

interface OrgState {
  /** Credits minus settled debits. */
  balance: bigint
  /**
   * Sum of open holds, and the same per month and key and per month and project: month -> id ->
   * micro-EGP, without the zeros. Nested rather than keyed by "month|id", which built and hashed a
   * new string on every admission and settlement.
   */
  held: bigint
  keyHeld: Map<string, Map<string, bigint>>
  projectHeld: Map<string, Map<string, bigint>>
  /** Settled spend: month -> id -> micro-EGP. */
  keySpend: Map<string, Map<string, bigint>>
  projectSpend: Map<string, Map<string, bigint>>
  /** Admission times per key. */
  windows: Map<string, ArrivalWindow>
  holds: Map<string, Hold>
  /** No hold expires before this (a lower bound): until then there is nothing to release. */
  nextExpiryMs: number
  /** Request ids settled within the retention. */
  settled: RecentIds
  /** The fence token of the rebuild that loaded these counters; null once `load` or `adjust` changed them. */
  loadToken: string | null
  /** Names the counters' state for `adjust`: new at each load, rebuild, adjustment, credit and late rows applied. */
  revision: string
  /** Settled ids recorded for the reconciler (`watchSettled`). */
  watch: { token: string; untilMs: number; ids: string[] } | null
}

// Months of settled spend kept per organization: the current one, and the previous ones that
// requests admitted before midnight may still settle into.
const monthsKept = 3

/**
 * The admission store of a single gateway process (the embedded default): the same rules as the
 * Redis store, on plain maps. Each method runs to completion without awaiting, so concurrent calls
 * are atomic with respect to each other.
 */
export class InProcessAdmissionStore implements AdmissionStore {
  private readonly orgs = new Map<string, OrgState>()
  /** Settlements that came while their organization had no counters, by organization and request id; kept since their `nowMs`. */
  private readonly kept = new Map<string, Map<string, Settlement>>()
  private readonly fences = new Map<string, { token: string; expiresAtMs: number }>()
  private readonly settledRetentionMs: number
  private readonly loadFenceMs: number

  constructor(options: { settledRetentionMs?: number; loadFenceMs?: number } = {}) {
    this.settledRetentionMs = options.settledRetentionMs ?? defaultSettledRetentionMs
    this.loadFenceMs = options.loadFenceMs ?? defaultLoadFenceMs
  }

  async admit(request: AdmitRequest): Promise<AdmitResult> {
    checkAdmitRequest(request)
    const month = billingMonth(request.nowMs, request.timeZone)
    const org = this.orgs.get(request.orgId)
    if (!org) return { admitted: false, reason: 'not_loaded' }
    const { requestId, keyId, projectId, nowMs, rpmLimit: limit, worstCaseMicros } = request
    if (org.holds.has(requestId)) throw new Error(`request ${requestId} was admitted before`)
    releaseExpiredHolds(org, nowMs)

    let window = org.windows.get(keyId)
    if (!window) org.windows.set(keyId, (window = new ArrivalWindow()))
    window.dropUntil(nowMs - rateWindowMs)
    if (window.length >= limit) return { admitted: false, reason: 'rate_limit_exceeded', limit, retryAfterS: retryAfterSeconds(window.at(window.length - limit), nowMs) }

    const refusal = moneyRefusal({
      worstCaseMicros,
      balanceMicros: org.balance,
      heldMicros: org.held,
      keyCapMicros: request.keyCapMicros,
      keySpentMicros: org.keySpend.get(month)?.get(keyId) ?? 0n,
      keyHeldMicros: org.keyHeld.get(month)?.get(keyId) ?? 0n,
      projectCapMicros: request.projectCapMicros,
      projectSpentMicros: org.projectSpend.get(month)?.get(projectId) ?? 0n,
      projectHeldMicros: org.projectHeld.get(month)?.get(projectId) ?? 0n,
    })
    if (refusal) return refusal

    window.insert(nowMs)
    const expiresAtMs = nowMs + request.reservationTtlMs
    const hold: Hold = { keyId, projectId, month, amount: worstCaseMicros, expiresAtMs }
    org.holds.set(requestId, hold)
    org.nextExpiryMs = Math.min(org.nextExpiryMs, expiresAtMs)
    addHeld(org, hold, 1n)
    return { admitted: true, limit, remaining: limit - window.length, resetMs: resetMilliseconds(window.at(0), nowMs), month, reservedMicros: worstCaseMicros, expiresAtMs }
  }

  async settle(settlement: Settlement): Promise<SettleResult> {
    checkSettlement(settlement)
    const org = this.orgs.get(settlement.orgId)
    if (!org) return { outcome: this.keep(settlement), debitedMicros: 0n, releasedMicros: 0n }
    const { requestId, nowMs, costMicros, month } = settlement
    // Nothing below can fail: the id is remembered as settled from here on.
    if (!org.settled.remember(requestId, nowMs)) return { outcome: 'already_settled', debitedMicros: 0n, releasedMicros: 0n }
    if (org.watch !== null) watched(org, requestId, nowMs)

    const hold = org.holds.get(requestId)
    if (hold) {
      org.holds.delete(requestId)
      addHeld(org, hold, -1n)
    }
    debit(org, settlement)
    return { outcome: hold ? 'settled' : 'settled_unreserved', debitedMicros: costMicros, releasedMicros: hold?.amount ?? 0n }
  }

  /** Keeps the settlement of an organization without counters for its rebuild, unless one is reading the ledger. */
  private keep(settlement: Settlement): 'pending' | 'loading' | 'already_settled' {
    const { orgId, requestId, nowMs } = settlement
    const fence = this.fences.get(orgId)
    if (fence) {
      if (nowMs < fence.expiresAtMs) return 'loading'
      // Expired, as Redis would drop it: the rebuild that set it may not finish now.
      this.fences.delete(orgId)
    }
    let kept = this.kept.get(orgId)
    if (!kept) this.kept.set(orgId, (kept = new Map()))
    if (kept.has(requestId)) return 'already_settled'
    kept.set(requestId, settlement)
    return 'pending'
  }

  async releaseExpired(orgId: string, nowMs: number): Promise<number> {
    checkOrgId(orgId)
    const org = this.orgs.get(orgId)
    if (!org) return 0
    for (const [keyId, window] of org.windows) {
      if (window.length === 0 || window.at(window.length - 1) <= nowMs - rateWindowMs) org.windows.delete(keyId)
    }
    return releaseExpiredHolds(org, nowMs)
  }

  async load(orgId: string, counters: OrgCounters): Promise<boolean> {
    checkCounters(orgId, counters)
    this.kept.delete(orgId)
    const org = this.setCounters(orgId, counters)
    org.loadToken = null
    org.revision = crypto.randomUUID()
    org.watch = null
    return true
  }

  async beginLoad(orgId: string, nowMs: number): Promise<LoadFence | null> {
    checkOrgId(orgId)
    if (this.orgs.has(orgId)) return null
    let fence = this.fences.get(orgId)
    if (!fence || nowMs >= fence.expiresAtMs) this.fences.set(orgId, (fence = { token: crypto.randomUUID(), expiresAtMs: nowMs + this.loadFenceMs }))
    const kept = this.kept.get(orgId) ?? new Map<string, Settlement>()
    for (const [requestId, settlement] of kept) if (settlement.nowMs + keptSettlementTtlMs <= nowMs) kept.delete(requestId)
    return { token: fence.token, keptIds: [...kept.keys()] }
  }

  async finishLoad(orgId: string, counters: OrgCounters, fence: LoadFence, recordedIds: readonly string[], nowMs: number): Promise<boolean> {
    checkCounters(orgId, counters)
    const current = this.fences.get(orgId)
    if (this.orgs.has(orgId) || current?.token !== fence.token || nowMs >= current.expiresAtMs) return false
    this.fences.delete(orgId)
    const org = this.setCounters(orgId, counters)
    org.loadToken = fence.token
    org.revision = fence.token
    const recorded = new Set(recordedIds)
    for (const [requestId, settlement] of this.kept.get(orgId) ?? []) {
      org.settled.remember(requestId, nowMs)
      // Applied unless the ledger read already counted its usage row; no hold survived to release.
      if (!recorded.has(requestId)) debit(org, settlement, counters.month)
    }
    this.kept.delete(orgId)
    return true
  }

  private setCounters(orgId: string, counters: OrgCounters): OrgState {
    let org = this.orgs.get(orgId)
    if (!org) {
      org = { balance: 0n, held: 0n, keyHeld: new Map(), projectHeld: new Map(), keySpend: new Map(), projectSpend: new Map(), windows: new Map(), holds: new Map(), nextExpiryMs: Infinity, settled: new RecentIds(this.settledRetentionMs), loadToken: null, revision: '', watch: null }
      this.orgs.set(orgId, org)
    }
    org.balance = counters.balanceMicros
    setMonth(org.keySpend, counters.month, new Map(counters.keySpend))
    setMonth(org.projectSpend, counters.month, new Map(counters.projectSpend))
    return org
  }

  async applyLate(orgId: string, month: string, rows: readonly LateUsage[], nowMs: number, loadToken: string): Promise<LateApplied | null> {
    checkLateUsage(orgId, month, rows, nowMs)
    const org = this.orgs.get(orgId)
    if (!org || org.loadToken !== loadToken) return null
    const result = { applied: 0, debitedMicros: 0n }
    for (const row of rows) {
      if (!org.settled.remember(row.requestId, nowMs)) continue
      if (org.watch !== null) watched(org, row.requestId, nowMs)
      debit(org, { ...row, orgId, nowMs }, month)
      result.applied++
      result.debitedMicros += row.costMicros
    }
    // A repair computed before counted these rows in its ledger read: it must not apply now.
    if (result.applied > 0) org.revision = crypto.randomUUID()
    return result
  }

  async credit(orgId: string, amountMicros: bigint): Promise<CreditOutcome> {
    checkCredit(orgId, amountMicros)
    const org = this.orgs.get(orgId)
    if (!org) {
      // A rebuild reading the ledger now may have missed this credit's row: it must read again.
      this.fences.delete(orgId)
      return 'not_loaded'
    }
    if (org.balance + amountMicros > maxMicros) throw creditOverflow(orgId, amountMicros)
    org.balance += amountMicros
    // Its ledger row came first: a reconciler's ledger read and snapshot around it would disagree,
    // and a repair computed before would add it again.
    org.watch = null
    org.revision = crypto.randomUUID()
    return 'credited'
  }

  async watchSettled(orgId: string, nowMs: number, untilMs: number): Promise<string | null> {
    checkOrgId(orgId)
    const org = this.orgs.get(orgId)
    if (!org) return null
    if (org.watch === null || org.watch.untilMs <= nowMs) org.watch = { token: crypto.randomUUID(), untilMs, ids: [] }
    else org.watch.untilMs = Math.max(org.watch.untilMs, untilMs)
    return org.watch.token
  }

  async watchedSnapshot(orgId: string, month: string, watch: string, nowMs: number): Promise<WatchedSnapshot | null> {
    const snapshot = await this.snapshot(orgId, month, nowMs)
    const org = this.orgs.get(orgId)
    if (!snapshot || !org || org.watch?.token !== watch || org.watch.untilMs <= nowMs) return null
    const { ids } = org.watch
    org.watch = null
    return { ...snapshot, revision: org.revision, settledIds: ids }
  }

  async adjust(orgId: string, revision: string, change: OrgCounters): Promise<boolean> {
    checkChange(orgId, change)
    const org = this.orgs.get(orgId)
    if (!org || org.revision !== revision) return false
    const { month } = change
    checkAdjustment(orgId, { month, balanceMicros: org.balance, keySpend: org.keySpend.get(month) ?? new Map(), projectSpend: org.projectSpend.get(month) ?? new Map() }, change)
    org.balance += change.balanceMicros
    for (const [keyId, amount] of change.keySpend) addSpend(org.keySpend, month, keyId, amount)
    for (const [projectId, amount] of change.projectSpend) addSpend(org.projectSpend, month, projectId, amount)
    for (const spend of [org.keySpend.get(month), org.projectSpend.get(month)]) for (const [id, amount] of spend ?? []) if (amount === 0n) spend!.delete(id)
    org.loadToken = null
    org.revision = crypto.randomUUID()
    return true
  }

  async snapshot(orgId: string, month: string, nowMs?: number): Promise<OrgSnapshot | null> {
    checkOrgId(orgId)
    checkMonth(month)
    const org = this.orgs.get(orgId)
    if (!org) return null
    const taken: OrgSnapshot = {
      month,
      balanceMicros: org.balance,
      heldMicros: org.held,
      keySpend: new Map(org.keySpend.get(month)),
      projectSpend: new Map(org.projectSpend.get(month)),
      keyHeld: new Map(org.keyHeld.get(month)),
      projectHeld: new Map(org.projectHeld.get(month)),
      reservations: [...org.holds]
        .map(([requestId, hold]) => ({ requestId, keyId: hold.keyId, projectId: hold.projectId, month: hold.month, amountMicros: hold.amount, expiresAtMs: hold.expiresAtMs }))
        .sort((a, b) => (a.requestId < b.requestId ? -1 : a.requestId > b.requestId ? 1 : 0)),
    }
    return nowMs === undefined ? taken : withoutExpiredHolds(taken, nowMs)
  }
}

/**
 * Debits a settlement's cost from the balance and adds it to its month's spends. A settlement kept
 * through a rebuild of `loadedMonth` counts only there: older months' spends were not loaded.
 */
function debit(org: OrgState, settlement: Settlement, loadedMonth?: string): void {
  const { costMicros, month } = settlement
  if (costMicros === 0n) return
  org.balance -= costMicros
  if (loadedMonth !== undefined && month !== loadedMonth) return
  addSpend(org.keySpend, month, settlement.keyId, costMicros)
  addSpend(org.projectSpend, month, settlement.projectId, costMicros)
}

/** Records a settled id for the organization's watch, ending the watch once its time is up. */
function watched(org: OrgState, requestId: string, nowMs: number): void {
  if (nowMs < org.watch!.untilMs) org.watch!.ids.push(requestId)
  else org.watch = null
}

function releaseExpiredHolds(org: OrgState, nowMs: number): number {
  if (nowMs < org.nextExpiryMs) return 0
  let released = 0
  let nextExpiryMs = Infinity
  for (const [requestId, hold] of org.holds) {
    if (hold.expiresAtMs <= nowMs) {
      org.holds.delete(requestId)
      addHeld(org, hold, -1n)
      released++
    } else {
      nextExpiryMs = Math.min(nextExpiryMs, hold.expiresAtMs)
    }
  }
  org.nextExpiryMs = nextExpiryMs
  return released
}

function addHeld(org: OrgState, hold: Hold, sign: 1n | -1n): void {
  if (hold.amount === 0n) return
  const amount = sign * hold.amount
  org.held += amount
  addOrDelete(org.keyHeld, hold.month, hold.keyId, amount)
  addOrDelete(org.projectHeld, hold.month, hold.projectId, amount)
}

function addOrDelete(months: Map<string, Map<string, bigint>>, month: string, id: string, amount: bigint): void {
  let held = months.get(month)
  const total = (held?.get(id) ?? 0n) + amount
  if (total > 0n) {
    if (!held) months.set(month, (held = new Map()))
    held.set(id, total)
  } else if (held) {
    held.delete(id)
    if (held.size === 0) months.delete(month)
  }
}

function addSpend(months: Map<string, Map<string, bigint>>, month: string, id: string, amount: bigint): void {
  let spend = months.get(month)
  if (!spend) setMonth(months, month, (spend = new Map()))
  spend.set(id, (spend.get(id) ?? 0n) + amount)
}

function setMonth(months: Map<string, Map<string, bigint>>, month: string, spend: Map<string, bigint>): void {
  months.set(month, spend)
  if (months.size > monthsKept) months.delete([...months.keys()].sort()[0]!)
}

/**
 * A key's admission times, ascending. Expired times are dropped from the front by moving a start
 * index, not by shifting the array: a key at 20 req/s holds 1,200 times, which `splice(0, 1)` moved
 * on every admission.
 */
export class ArrivalWindow {
  private times: number[] = []
  private start = 0

  get length(): number {
    return this.times.length - this.start
  }

  /** The time at `index`, counted from the oldest. */
  at(index: number): number {
    return this.times[this.start + index]!
  }

  /** Drops the times at or before `cutoffMs`. */
  dropUntil(cutoffMs: number): void {
    const times = this.times
    let start = this.start
    while (start < times.length && times[start]! <= cutoffMs) start++
    if (start === times.length) {
      this.times = []
      start = 0
    } else if (start >= 1_024 && start * 2 >= times.length) {
      this.times = times.slice(start)
      start = 0
    }
    this.start = start
  }

  /** Adds a time, in order (a clock that stepped back puts it before later ones). */
  insert(atMs: number): void {
    const times = this.times
    let index = times.length
    while (index > this.start && times[index - 1]! > atMs) index--
    if (index === times.length) times.push(atMs)
    else times.splice(index, 0, atMs)
  }
}
