import { describe, expect, test } from 'bun:test'
import { egpToMicros, formatEgp, microsToEgp, nextDate, plainEgp, sharePercent, startOfDayIn, dateInZone } from '../../../web/src/lib/format'

describe('the dashboard formats money exactly', () => {
  test('reads and writes EGP decimal strings as micro-EGP without rounding', () => {
    expect([egpToMicros('12.345678'), egpToMicros('0.000001'), egpToMicros('-3.5'), egpToMicros('250')]).toEqual([12_345_678n, 1n, -3_500_000n, 250_000_000n])
    expect([microsToEgp(12_345_678n), microsToEgp(1n), microsToEgp(-3_500_000n)]).toEqual(['12.345678', '0.000001', '-3.500000'])
    // 2^53 + 1 micro-EGP: a float would lose the last digit.
    expect(microsToEgp(egpToMicros('9007199254.740993'))).toBe('9007199254.740993')
  })

  test('refuses what is not an amount', () => {
    expect(() => egpToMicros('1e3')).toThrow()
    expect(() => egpToMicros('12.3456789')).toThrow()
  })

  test('shows small amounts with their micro digits and large ones in piastres', () => {
    const digits = (text: string) => text.replace(/[^\d.]/g, '')
    expect(digits(formatEgp('0.006123'))).toBe('0.006123')
    expect(digits(formatEgp('1234.5'))).toBe('1234.50')
    expect(digits(formatEgp('1234.567891', { exact: true }))).toBe('1234.567891')
    expect(digits(formatEgp('0'))).toBe('0.00')
    expect(formatEgp(null)).toBe('—')
  })

  test('gives an amount back as a person types it', () => {
    expect([plainEgp('250.000000'), plainEgp('99.500000'), plainEgp('0.000100'), plainEgp(null)]).toEqual(['250', '99.5', '0.0001', ''])
  })

  test('measures spend against a cap in integers', () => {
    expect([sharePercent('25', '100'), sharePercent('0.000001', '0.000003'), sharePercent('5', null), sharePercent('1', '0')]).toEqual([25, 33.33, null, 100])
  })
})

describe('the dashboard counts days in the billing time zone', () => {
  test('finds midnight of a day in the zone, across a daylight saving change', () => {
    expect(startOfDayIn('2026-01-15', 'Africa/Cairo')).toBe(Date.UTC(2026, 0, 14, 22) / 1000)
    expect(startOfDayIn('2026-07-15', 'Africa/Cairo')).toBe(Date.UTC(2026, 6, 14, 21) / 1000)
    expect(startOfDayIn('2026-03-29', 'Europe/Berlin')).toBe(Date.UTC(2026, 2, 28, 23) / 1000)
    expect(startOfDayIn('2026-03-30', 'Europe/Berlin')).toBe(Date.UTC(2026, 2, 29, 22) / 1000)
    expect(startOfDayIn('2026-01-15', 'UTC')).toBe(Date.UTC(2026, 0, 15) / 1000)
  })

  test("names today's date as the zone sees it", () => {
    // 23:30 UTC on 31 Dec is already 1 Jan in Cairo.
    const lateUtc = Date.UTC(2026, 11, 31, 23, 30)
    expect([dateInZone('Africa/Cairo', 0, lateUtc), dateInZone('UTC', 0, lateUtc), dateInZone('Africa/Cairo', 1, lateUtc)]).toEqual(['2027-01-01', '2026-12-31', '2026-12-31'])
  })

  test('steps to the next day across months and years', () => {
    expect([nextDate('2026-01-31'), nextDate('2026-02-28'), nextDate('2026-12-31')]).toEqual(['2026-02-01', '2026-03-01', '2027-01-01'])
  })
})
