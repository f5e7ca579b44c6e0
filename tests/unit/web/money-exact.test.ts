import { describe, expect, test } from 'bun:test'
import { parseCreditAmount } from '../../../web/src/screens/admin/credit-amount'
import { costMicros } from '../../../web/src/screens/models/prices'

describe('parseCreditAmount', () => {
  test('turns typed EGP into the exact decimal and micro-EGP, without float rounding', () => {
    expect([parseCreditAmount('250'), parseCreditAmount(' 1,250.50 '), parseCreditAmount('0.1'), parseCreditAmount('٣٠٫٢٥'), parseCreditAmount('9007199254.740991')]).toEqual([
      { decimal: '250', micros: 250_000_000n },
      { decimal: '1250.5', micros: 1_250_500_000n },
      { decimal: '0.1', micros: 100_000n },
      { decimal: '30.25', micros: 30_250_000n },
      { decimal: '9007199254.740991', micros: 9_007_199_254_740_991n },
    ])
  })

  test('refuses what the API would refuse, saying why', () => {
    const refused = ['', '0', '0.000000', '-5', '1e3', '1.2.3', '12.1234567', 'abc', '9007199254.740992'].map((input) => 'error' in parseCreditAmount(input))

    expect(refused).toEqual(Array(9).fill(true))
  })
})

describe('costMicros', () => {
  test('prices usage by the gateway rule, rounding the total up to a micro-EGP', () => {
    // ceil((7 x 150,000 + 3 x 600,000) / 1,000,000) = ceil(2.85) = 3 micro-EGP
    expect(costMicros({ prompt_tokens: 7, completion_tokens: 3 }, { input_price_egp_per_1m: '0.15', output_price_egp_per_1m: '0.6' })).toBe(3n)
    expect(costMicros({ prompt_tokens: 1_000_000, completion_tokens: 2_000_000 }, { input_price_egp_per_1m: '12.345678', output_price_egp_per_1m: '40' })).toBe(92_345_678n)
    expect(costMicros({ prompt_tokens: 0, completion_tokens: 0 }, { input_price_egp_per_1m: '5', output_price_egp_per_1m: '5' })).toBe(0n)
  })

  test('knows no cost for a price that is not a decimal EGP string', () => {
    expect(costMicros({ prompt_tokens: 1, completion_tokens: 1 }, { input_price_egp_per_1m: '1e3', output_price_egp_per_1m: '1' })).toBeNull()
  })
})
