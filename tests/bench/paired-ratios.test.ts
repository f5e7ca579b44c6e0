import { describe, expect, test } from 'bun:test'
import { pairedRatios } from '../../bench/paired-ratios'

describe('bench/paired-ratios.ts', () => {
  test("gives each pair's second figure over its first, in order, and their median", () => {
    expect(pairedRatios([[100, 90], [80, 88], [50, 50]])).toBe('x1.000 (0.900, 1.100, 1.000)')
    expect(pairedRatios([[200, 100]])).toBe('x0.500 (0.500)')
  })

  test('leaves out pairs with a figure missing or a first figure that is not positive', () => {
    expect(pairedRatios([[null, 90], [100, null], [0, 5], [-1, 5], [10, 12]])).toBe('x1.200 (1.200)')
    expect(pairedRatios([[null, null], [0, 1]])).toBe('-')
    expect(pairedRatios([])).toBe('-')
  })
})
