import { describe, expect, test } from 'bun:test'
import { costMicros, formatEgp, monthlyCostExampleMicros, parseEgp } from '../../../server/core/money'

describe('money', () => {
  test('parses decimal EGP into integer micro-EGP without floats', () => {
    expect([parseEgp('0'), parseEgp('12.5'), parseEgp('0.000001'), parseEgp('1000000'), parseEgp('30.123456')]).toEqual([0n, 12_500_000n, 1n, 1_000_000_000_000n, 30_123_456n])
  })

  test.each(['', '-1', '1.2345678', '1e3', '1,5', ' 2.'])('refuses %p', (text) => {
    expect(() => parseEgp(text)).toThrow()
  })

  test('formats micro-EGP with six decimals', () => {
    expect([formatEgp(0n), formatEgp(1n), formatEgp(12_500_000n), formatEgp(-1_500_000n)]).toEqual(['0.000000', '0.000001', '12.500000', '-1.500000'])
  })

  test('cost rounds the sum up to the micro-EGP, never per part', () => {
    expect(costMicros(1, 1, 1n, 1n)).toBe(1n)
    expect(costMicros(0, 0, 30_000_000n, 90_000_000n)).toBe(0n)
    expect(costMicros(7, 2, 5_000_000n, 15_000_000n)).toBe(65n)
    expect(costMicros(333_333, 0, 3n, 0n)).toBe(1n)
    expect(costMicros(333_334, 0, 3n, 0n)).toBe(2n)
  })

  test('cost stays exact far beyond the float range', () => {
    expect(costMicros(2 ** 40, 2 ** 40, 999_999_999_999n, 999_999_999_999n)).toBe((2n * 2n ** 40n * 999_999_999_999n + 999_999n) / 1_000_000n)
  })

  test('the monthly example prices 50M input and 15M output tokens', () => {
    expect(formatEgp(monthlyCostExampleMicros(parseEgp('30'), parseEgp('90')))).toBe('2850.000000')
  })
})
