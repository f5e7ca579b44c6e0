import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { LoginLimiter } from '../../../server/core/login-limiter'

/** The refusal `run` throws, or null when it passes. */
function refusal(run: () => void): GatewayError | null {
  try {
    run()
    return null
  } catch (error) {
    if (error instanceof GatewayError) return error
    throw error
  }
}

function clockedLimiter(limits: ConstructorParameters<typeof LoginLimiter>[0]) {
  const clock = { nowMs: 0 }
  return { clock, limiter: new LoginLimiter({ windowMs: 60_000, ...limits }, () => clock.nowMs) }
}

describe('LoginLimiter', () => {
  test('refuses an address after its failures fill the window, with the seconds until the oldest leaves', () => {
    const { clock, limiter } = clockedLimiter({ failuresPerAccount: 2 })
    limiter.recordFailure('ada@example.test')
    clock.nowMs = 20_000
    limiter.recordFailure('ada@example.test')

    clock.nowMs = 30_500
    const refused = refusal(() => limiter.checkAccount('ada@example.test'))

    expect(refused).toMatchObject({ code: 'rate_limit_exceeded', retryAfterS: 30 })
    expect(refusal(() => limiter.checkAccount('bob@example.test'))).toBeNull()
  })

  test('the window slides: each failure leaves it on its own, not all at a boundary', () => {
    const { clock, limiter } = clockedLimiter({ failuresPerAccount: 2 })
    limiter.recordFailure('ada@example.test')
    clock.nowMs = 40_000
    limiter.recordFailure('ada@example.test')

    clock.nowMs = 60_000
    const afterFirstLeft = refusal(() => limiter.checkAccount('ada@example.test'))
    limiter.recordFailure('ada@example.test')
    const fullAgain = refusal(() => limiter.checkAccount('ada@example.test'))

    expect(afterFirstLeft).toBeNull()
    expect(fullAgain?.retryAfterS).toBe(40)
  })

  test('a successful login forgets the failures of the address', () => {
    const { limiter } = clockedLimiter({ failuresPerAccount: 1 })
    limiter.recordFailure('ada@example.test')

    limiter.clearFailures('ada@example.test')

    expect(refusal(() => limiter.checkAccount('ada@example.test'))).toBeNull()
  })

  test('counts attempts per IP; refused attempts do not count, and an unknown peer is not limited', () => {
    const { clock, limiter } = clockedLimiter({ attemptsPerIp: 2 })
    limiter.admitAttempt('203.0.113.7')
    limiter.admitAttempt('203.0.113.7')

    clock.nowMs = 59_000
    const refused = refusal(() => limiter.admitAttempt('203.0.113.7'))
    clock.nowMs = 60_000
    const admitted = refusal(() => limiter.admitAttempt('203.0.113.7'))

    expect(refused?.message).toBe('Too many attempts from your address; retry in 1 second.')
    expect(admitted).toBeNull()
    expect(refusal(() => limiter.admitAttempt('198.51.100.1'))).toBeNull()
    expect(refusal(() => [1, 2, 3].forEach(() => limiter.admitAttempt(null)))).toBeNull()
  })

  test('limits verification mails per user', () => {
    const { limiter } = clockedLimiter({ mailsPerAccount: 1 })
    limiter.admitMail('user_a')

    expect(refusal(() => limiter.admitMail('user_a'))?.code).toBe('rate_limit_exceeded')
    expect(refusal(() => limiter.admitMail('user_b'))).toBeNull()
  })
})
