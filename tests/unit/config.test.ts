import { describe, expect, test } from 'bun:test'
import { loadConfig, upstreamFetchBudget } from '../../server/config'

describe('loadConfig', () => {
  test('reads integers from the environment as numbers, so arithmetic on them adds', () => {
    const config = loadConfig({ PORT: '0', BODY_BUDGET_BYTES: '1024', USAGE_FLUSH_MS: '20', USAGE_MAX_PENDING: '1000', RECONCILE_INTERVAL_S: '5', RESERVATION_MARGIN_MS: '3000' })

    expect(config).toMatchObject({ port: 0, bodyBudgetBytes: 1024, usageFlushMs: 20, usageMaxPending: 1000, reconcileIntervalS: 5, reservationMarginMs: 3000 })
  })

  test('a hold outlives its request by 60 s unless RESERVATION_MARGIN_MS says otherwise', () => {
    expect(loadConfig({}).reservationMarginMs).toBe(60_000)
  })

  test('refuses a value that is not a number', () => {
    expect(() => loadConfig({ RESERVATION_MARGIN_MS: 'a minute' })).toThrow('RESERVATION_MARGIN_MS')
  })
})

describe('upstreamFetchBudget', () => {
  test("shares fetch's limit between calls and a reserve for health probes (a sixteenth, 1 to 16)", () => {
    expect(upstreamFetchBudget('8192')).toEqual({ set: true, calls: 8176, probes: 16 })
    expect(upstreamFetchBudget('100')).toEqual({ set: true, calls: 94, probes: 6 })
    expect(upstreamFetchBudget('20')).toEqual({ set: true, calls: 19, probes: 1 })
    expect(upstreamFetchBudget('2')).toEqual({ set: true, calls: 1, probes: 1 })
    // Nothing to share: calls and probes both get the one place.
    expect(upstreamFetchBudget('1')).toEqual({ set: true, calls: 1, probes: 1 })
  })

  test("takes Bun's 256 when the variable is unset or unusable, and Bun's most, 65535, above it", () => {
    for (const setting of [undefined, '', ' ', '0', '-5', '2.5', 'abc']) expect(upstreamFetchBudget(setting)).toEqual({ set: false, calls: 240, probes: 16 })
    expect(upstreamFetchBudget('100000')).toEqual({ set: true, calls: 65_519, probes: 16 })
  })
})
