import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { BodyBudget, defaultShares } from '../../../server/http/body-budget'

const mib = 1024 * 1024

function refusal(run: () => void): string | null {
  try {
    run()
    return null
  } catch (error) {
    return (error as GatewayError).code
  }
}

describe('BodyBudget', () => {
  test('gives a client a quarter of the budget and requests without a credential half, each at least the largest body', () => {
    expect(defaultShares(256 * mib, 32 * mib, 10 * mib)).toEqual({ clientBytes: 64 * mib, anonymousBytes: 128 * mib })
    expect(defaultShares(40 * mib, 32 * mib, 10 * mib)).toEqual({ clientBytes: 32 * mib, anonymousBytes: 20 * mib })
    expect(defaultShares(mib, 32 * mib, 10 * mib)).toEqual({ clientBytes: mib, anonymousBytes: mib })
  })

  test('refuses a client past its share with 429 while another client takes its own', () => {
    const budget = new BodyBudget(100, { clientBytes: 25, anonymousBytes: 50 })

    budget.take(20, 'key-a', false)
    const past = refusal(() => budget.take(10, 'key-a', false))
    const other = refusal(() => budget.take(25, 'key-b', false))

    expect(past).toBe('rate_limit_exceeded')
    expect(other).toBeNull()
    expect(budget.used).toBe(45)
  })

  test('refuses requests without a credential past half the budget with 503, whatever their number of addresses', () => {
    const budget = new BodyBudget(100, { clientBytes: 25, anonymousBytes: 50 })

    budget.take(25, '192.0.2.1', true)
    budget.take(25, '192.0.2.2', true)
    const anonymous = refusal(() => budget.take(1, '192.0.2.3', true))
    const keyed = refusal(() => budget.take(25, 'key-a', false))

    expect(anonymous).toBe('large_request_backpressure')
    expect(keyed).toBeNull()
  })

  test('refuses anyone past the whole budget with 503, and takes bytes given back', () => {
    const budget = new BodyBudget(50, { clientBytes: 50, anonymousBytes: 50 })
    budget.take(50, 'key-a', false)

    const full = refusal(() => budget.take(1, 'key-b', false))
    budget.give(50, 'key-a', false)

    expect(full).toBe('large_request_backpressure')
    expect(budget.heldBy('key-a')).toBe(0)
    expect(refusal(() => budget.take(50, 'key-b', false))).toBeNull()
  })
})
