import { describe, expect, test } from 'bun:test'
import type { GatewayError } from '@nilegate/shared/errors'
import { EdgeLimiter } from '../../../server/core/edge-limiter'

function refusal(run: () => unknown): Pick<GatewayError, 'code' | 'message' | 'retryAfterS'> | null {
  try {
    run()
    return null
  } catch (error) {
    const { code, message, retryAfterS } = error as GatewayError
    return { code, message, retryAfterS }
  }
}

describe('EdgeLimiter', () => {
  test('admits 100 requests of a key in a second, refuses the 101st with Retry-After 1 and the edge message', () => {
    let now = 0
    const edge = new EdgeLimiter(100, 400, () => now)
    for (let i = 0; i < 100; i++) {
      now = i * 9.99
      edge.admit('key')
    }

    expect(refusal(() => edge.admit('key'))).toEqual({ code: 'rate_limit_exceeded', message: 'Too many requests at the edge; retry after 1 second.', retryAfterS: 1 })
  })

  test('the window slides: a second after the oldest admitted request, one more is admitted', () => {
    let now = 0
    const edge = new EdgeLimiter(3, 400, () => now)
    for (const at of [0, 100, 200]) {
      now = at
      edge.admit('key')
    }

    now = 999
    const early = refusal(() => edge.admit('key'))
    now = 1_000
    const onTime = refusal(() => edge.admit('key'))
    const again = refusal(() => edge.admit('key'))

    expect([early?.code, onTime, again?.code]).toEqual(['rate_limit_exceeded', null, 'rate_limit_exceeded'])
  })

  test('keys do not share a window', () => {
    const edge = new EdgeLimiter(1, 400, () => 0)
    edge.admit('a')

    expect(refusal(() => edge.admit('b'))).toBeNull()
  })

  test('holds at most 400 requests of a key at once; a released place can be taken again, once', () => {
    const edge = new EdgeLimiter(1_000, 2, () => 0)
    edge.admit('key')
    const first = edge.acquire('key')
    edge.acquire('key')

    const third = refusal(() => edge.acquire('key'))
    first()
    first()
    const afterRelease = refusal(() => edge.acquire('key'))
    const overAgain = refusal(() => edge.acquire('key'))

    expect([third?.code, afterRelease, overAgain?.code]).toEqual(['rate_limit_exceeded', null, 'rate_limit_exceeded'])
  })
})
