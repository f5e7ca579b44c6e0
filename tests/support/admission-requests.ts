import type { Admitted, AdmitRequest, LedgerCounters, OrgCounters, Settlement } from '../../server/core/admission'
import { randomBase62 } from '../../server/core/api-keys'

/** 2025-01-15 12:00 in Cairo: mid-month, so a test's minutes stay in one billing month. */
export const midJanuaryMs = Date.UTC(2025, 0, 15, 10, 0, 0)

/** A fresh organization id: each test works on its own organization. */
export function newOrgId(): string {
  return `org_${randomBase62(16)}`
}

let requests = 0

/** An admission request with a unique request id; priced at 1,000 uEGP, 1,000 RPM, no caps. */
export function admitRequest(overrides: Partial<AdmitRequest> & Pick<AdmitRequest, 'orgId'>): AdmitRequest {
  return {
    requestId: `req_${randomBase62(8)}${(++requests).toString(36)}`,
    keyId: 'key_a',
    projectId: 'proj_a',
    rpmLimit: 1_000,
    worstCaseMicros: 1_000n,
    keyCapMicros: null,
    projectCapMicros: null,
    nowMs: midJanuaryMs,
    reservationTtlMs: 600_000,
    ...overrides,
  }
}

/** The settlement of an admitted request at `costMicros` (default: its worst case). */
export function settlementOf(request: AdmitRequest, admitted: Pick<Admitted, 'month'>, overrides: Partial<Settlement> = {}): Settlement {
  return {
    requestId: request.requestId,
    orgId: request.orgId,
    keyId: request.keyId,
    projectId: request.projectId,
    month: admitted.month,
    costMicros: request.worstCaseMicros,
    nowMs: request.nowMs + 1_000,
    ...overrides,
  }
}

/** Counters with only a balance, for January 2025. */
export function orgCounters(balanceMicros: bigint, overrides: Partial<OrgCounters> = {}): OrgCounters {
  return { month: '202501', balanceMicros, keySpend: new Map(), projectSpend: new Map(), ...overrides }
}

/** What a ledger read answers: `orgCounters`, and which of the asked request ids have usage rows. */
export function ledgerCounters(balanceMicros: bigint, overrides: Partial<OrgCounters> = {}, recordedIds: string[] = []): LedgerCounters {
  return { ...orgCounters(balanceMicros, overrides), recordedIds }
}
