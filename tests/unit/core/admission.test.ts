import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { NoAnswerInTime } from '../../../server/core/answer-within'
import {
  admitLoaded,
  billingMonth,
  checkAdmitRequest,
  maxMicros,
  moneyRefusal,
  refusalError,
  retryAfterSeconds,
  type AdmissionStore,
  type MoneyPosition,
} from '../../../server/core/admission'
import { admitRequest, ledgerCounters, newOrgId, orgCounters } from '../../support/admission-requests'
import { waitFor } from '../../support/wait-for'

describe('billingMonth', () => {
  test('turns over at 00:00 Cairo on the 1st, in winter (UTC+2) and in summer time (UTC+3)', () => {
    const instants = [
      Date.UTC(2024, 11, 31, 21, 59, 59, 999),
      Date.UTC(2024, 11, 31, 22, 0, 0, 0),
      Date.UTC(2024, 3, 30, 20, 59, 59, 999),
      Date.UTC(2024, 3, 30, 21, 0, 0, 0),
    ]

    expect(instants.map((nowMs) => billingMonth(nowMs))).toEqual(['202412', '202501', '202404', '202405'])
  })

  test('follows the zone it is given, including offsets that are not whole hours', () => {
    const lastMinuteOfJanuaryInKathmandu = Date.UTC(2024, 0, 31, 18, 14, 0)

    expect([
      billingMonth(lastMinuteOfJanuaryInKathmandu, 'Asia/Kathmandu'),
      billingMonth(lastMinuteOfJanuaryInKathmandu + 60_000, 'Asia/Kathmandu'),
      billingMonth(lastMinuteOfJanuaryInKathmandu + 60_000, 'UTC'),
      billingMonth(Date.UTC(2024, 1, 1, 0, 0, 0), 'UTC'),
    ]).toEqual(['202401', '202402', '202401', '202402'])
  })

  test('answers each zone correctly when calls for several zones interleave within one second', () => {
    const nowMs = Date.UTC(2025, 0, 31, 22, 30, 0)

    expect([billingMonth(nowMs, 'UTC'), billingMonth(nowMs, 'Africa/Cairo'), billingMonth(nowMs + 1, 'UTC'), billingMonth(nowMs + 1, 'Africa/Cairo')]).toEqual(['202501', '202502', '202501', '202502'])
  })

  test('refuses an unknown zone and instants without a four-digit year', () => {
    expect(() => billingMonth(0, 'Mars/Olympus_Mons')).toThrow(RangeError)
    expect(() => billingMonth(Date.UTC(10_000, 0, 1))).toThrow(RangeError)
  })
})

describe('checkAdmitRequest', () => {
  test.each([
    ['an id with a separator', { keyId: 'key|a' }],
    ['an id with a brace', { orgId: 'org}x' }],
    ['an empty id', { requestId: '' }],
    ['a zero RPM limit', { rpmLimit: 0 }],
    ['a negative worst case', { worstCaseMicros: -1n }],
    ['a worst case of 2^53', { worstCaseMicros: maxMicros + 1n }],
    ['a cap of 2^53', { projectCapMicros: maxMicros + 1n }],
    ['a fractional time', { nowMs: 1.5 }],
    ['a zero TTL', { reservationTtlMs: 0 }],
  ])('refuses %s with a RangeError', (_, overrides) => {
    expect(() => checkAdmitRequest(admitRequest({ orgId: 'org_a', ...overrides }))).toThrow(RangeError)
  })

  test('accepts the largest exact amounts', () => {
    expect(() => checkAdmitRequest(admitRequest({ orgId: 'org_a', worstCaseMicros: maxMicros, keyCapMicros: maxMicros, projectCapMicros: 0n }))).not.toThrow()
  })
})

describe('retryAfterSeconds', () => {
  test('is the whole seconds until the admission leaves the window, between 1 and 60', () => {
    expect([retryAfterSeconds(0, 0), retryAfterSeconds(0, 1), retryAfterSeconds(0, 59_000), retryAfterSeconds(0, 59_999), retryAfterSeconds(0, 60_000), retryAfterSeconds(5_000, 0)]).toEqual([60, 60, 1, 1, 1, 60])
  })
})

describe('moneyRefusal', () => {
  const fits: MoneyPosition = {
    worstCaseMicros: 100n,
    balanceMicros: 1_000n,
    heldMicros: 900n,
    keyCapMicros: 1_000n,
    keySpentMicros: 800n,
    keyHeldMicros: 100n,
    projectCapMicros: 1_000n,
    projectSpentMicros: 450n,
    projectHeldMicros: 450n,
  }

  test('admits a worst case that fits exactly everywhere', () => {
    expect(moneyRefusal(fits)).toBeNull()
  })

  test('refuses with the first limit that does not fit: balance, key cap, project cap', () => {
    expect([
      moneyRefusal({ ...fits, balanceMicros: 0n, keyCapMicros: 0n }),
      moneyRefusal({ ...fits, heldMicros: 901n, keyCapMicros: 0n }),
      moneyRefusal({ ...fits, keyHeldMicros: 101n, projectCapMicros: 0n }),
      moneyRefusal({ ...fits, projectSpentMicros: 451n }),
    ]).toEqual([
      { admitted: false, reason: 'quota_exceeded' },
      { admitted: false, reason: 'insufficient_balance' },
      { admitted: false, reason: 'spending_cap_reached', capMicros: 1_000n },
      { admitted: false, reason: 'project_spend_cap_exceeded', capMicros: 1_000n },
    ])
  })

  test('never refuses an unpriced request', () => {
    expect(moneyRefusal({ ...fits, worstCaseMicros: 0n, balanceMicros: -5n, keyCapMicros: 0n })).toBeNull()
  })
})

describe('refusalError', () => {
  test('quotes the RPM limit and carries Retry-After on a 429', () => {
    const error = refusalError({ admitted: false, reason: 'rate_limit_exceeded', limit: 500, retryAfterS: 12 })

    expect([error.status, error.code, error.retryAfterS, error.message]).toEqual([429, 'rate_limit_exceeded', 12, 'Rate limit reached: 500 requests per minute for this key. Retry after 12 s.'])
  })

  test('quotes the caps in EGP on a 402', () => {
    const errors = [refusalError({ admitted: false, reason: 'project_spend_cap_exceeded', capMicros: 250_500_000n }), refusalError({ admitted: false, reason: 'spending_cap_reached', capMicros: 1n })]

    expect(errors.map((error) => [error.status, error.code, error.message])).toEqual([
      [402, 'project_spend_cap_exceeded', 'The project has reached its monthly spend cap of 250.500000 EGP.'],
      [402, 'spending_cap_reached', 'This API key has reached its monthly spend cap of 0.000001 EGP.'],
    ])
  })

  test('uses the catalog messages for the balance refusals', () => {
    expect([refusalError({ admitted: false, reason: 'quota_exceeded' }).code, refusalError({ admitted: false, reason: 'insufficient_balance' }).status]).toEqual(['quota_exceeded', 402])
  })
})

describe('admitLoaded', () => {
  test('reads the ledger once when the counters are absent, loads them and admits', async () => {
    const store = new InProcessAdmissionStore()
    const orgId = newOrgId()
    const reads: string[] = []
    const readLedger = async (id: string, month: string) => {
      reads.push(`${id} ${month}`)
      return ledgerCounters(5_000n, { month })
    }

    const results = [await admitLoaded(store, admitRequest({ orgId }), readLedger), await admitLoaded(store, admitRequest({ orgId }), readLedger)]

    expect(results.map((result) => result.admitted)).toEqual([true, true])
    expect(reads).toEqual([`${orgId} 202501`])
  })

  test('concurrent admissions on one store share a read; another store (another gateway) reads its own', async () => {
    const [store, other] = [new InProcessAdmissionStore(), new InProcessAdmissionStore()]
    const orgId = newOrgId()
    let reads = 0
    const readLedger = async (_: string, month: string) => {
      reads++
      await Bun.sleep(10)
      return ledgerCounters(1_000_000n, { month })
    }

    const results = await Promise.all([...Array.from({ length: 10 }, () => admitLoaded(store, admitRequest({ orgId }), readLedger)), admitLoaded(other, admitRequest({ orgId }), readLedger)])

    expect(results.every((result) => result.admitted)).toBe(true)
    expect(reads).toBe(2)
  })

  test('stops waiting after waitMs with NoAnswerInTime while the rebuild goes on and loads', async () => {
    const store = new InProcessAdmissionStore()
    const orgId = newOrgId()
    const readLedger = async (_: string, month: string) => {
      await Bun.sleep(50)
      return ledgerCounters(5_000n, { month })
    }

    const gaveUp = await admitLoaded(store, admitRequest({ orgId }), readLedger, { waitMs: 10 }).catch((error) => error)
    await waitFor(async () => (await store.snapshot(orgId, '202501')) !== null, { what: 'the rebuild to load' })

    expect(gaveUp).toBeInstanceOf(NoAnswerInTime)
    expect((await store.snapshot(orgId, '202501'))?.balanceMicros).toBe(5_000n)
  })

  test('fails with service_unavailable when the counters stay absent', async () => {
    const forgetful: AdmissionStore = Object.assign(new InProcessAdmissionStore(), { admit: async () => ({ admitted: false, reason: 'not_loaded' }) as const })

    const failure = await admitLoaded(forgetful, admitRequest({ orgId: newOrgId() }), async () => ledgerCounters(1n)).catch((error) => error)

    expect(failure).toBeInstanceOf(GatewayError)
    expect((failure as GatewayError).code).toBe('service_unavailable')
  })
})
