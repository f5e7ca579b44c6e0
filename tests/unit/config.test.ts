import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../server/config'

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
