import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import type { CatalogModel, Deployment } from '../../../server/core/catalog'
import { isUpstreamFailure, Router } from '../../../server/core/router'

function deployment(id: string, weight = 1): Deployment {
  return {
    id,
    provider: 'simulator',
    baseUrl: null,
    upstreamModel: 'm',
    region: 'EG',
    weight,
    apiKeyEnv: null,
    timeouts: { connectMs: 1_000, firstTokenMs: 1_000, idleMs: 1_000, totalMs: 1_000 },
    simulator: { ttftMs: 0, interTokenMs: 0 },
  }
}

function model(deployments: Deployment[]): CatalogModel {
  return {
    id: 'nile/test',
    ownedBy: 'test',
    created: 0,
    status: 'live',
    modality: 'chat',
    contextWindow: 1024,
    maxOutputTokens: 256,
    region: 'EG',
    weights: 'Open weights',
    published: '2024-01-01',
    inputPriceMicrosPerM: 0n,
    outputPriceMicrosPerM: 0n,
    pricesAreSamples: true,
    embeddingDimensions: null,
    supportsDimensions: false,
    retiresOn: null,
    replacement: null,
    deployments,
  }
}

/** A clock the test moves by hand. */
function clock() {
  let nowMs = 1_000_000
  return { now: () => nowMs, advance: (ms: number) => (nowMs += ms) }
}

function failTimes(router: Router, target: Deployment, times: number): void {
  for (let i = 0; i < times; i++) {
    router.acquire(target)
    router.release(target, 'failure')
  }
}

function caught(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  return new Error('expected a throw')
}

describe('Router.pick', () => {
  test('spreads idle traffic in proportion to the weights', () => {
    const heavy = deployment('heavy', 3)
    const light = deployment('light', 1)
    const router = new Router()
    const counts = { heavy: 0, light: 0 }

    for (let i = 0; i < 4_000; i++) counts[router.pick(model([heavy, light])).id as 'heavy' | 'light']++

    expect(counts.heavy / 4_000).toBeGreaterThan(0.7)
    expect(counts.heavy / 4_000).toBeLessThan(0.8)
  })

  test('prefers the deployment with fewer requests in flight for its weight', () => {
    const a = deployment('a', 2)
    const b = deployment('b', 1)
    const router = new Router()
    const picked: string[] = []

    for (let i = 0; i < 6; i++) {
      const chosen = router.pick(model([a, b]))
      router.acquire(chosen)
      picked.push(chosen.id)
    }

    expect([router.inFlight(a), router.inFlight(b)]).toEqual([4, 2])
    expect(picked.filter((id) => id === 'a')).toHaveLength(4)
  })

  test('skips excluded deployments', () => {
    const a = deployment('a', 100)
    const b = deployment('b', 1)
    const router = new Router()

    const picks = Array.from({ length: 50 }, () => router.pick(model([a, b]), new Set(['a'])).id)

    expect(new Set(picks)).toEqual(new Set(['b']))
  })

  test('keeps an organization that requires a region on that region, refusing when it has no deployment there', () => {
    const egypt = { ...deployment('eg', 1), region: 'EG' }
    const europe = { ...deployment('eu', 100), region: 'EU' }
    const router = new Router()

    const picks = Array.from({ length: 50 }, () => router.pick(model([egypt, europe]), new Set(), 'EG').id)
    const refusal = (() => {
      try {
        router.pick(model([europe]), new Set(), 'EG')
      } catch (error) {
        return error as GatewayError
      }
    })()

    expect(new Set(picks)).toEqual(new Set(['eg']))
    expect(refusal?.code).toBe('no_healthy_backends')
  })

  test('with nothing available, refuses with no_healthy_backends and Retry-After 30', () => {
    const a = deployment('a')
    const router = new Router(null, { failureThreshold: 1 })
    failTimes(router, a, 1)

    const error = caught(() => router.pick(model([a])))

    expect(error).toBeInstanceOf(GatewayError)
    expect({ code: (error as GatewayError).code, status: (error as GatewayError).status, retryAfterS: (error as GatewayError).retryAfterS }).toEqual({ code: 'no_healthy_backends', status: 503, retryAfterS: 30 })
  })
})

describe('Router circuit breaker', () => {
  test('opens after N consecutive failures and sends traffic elsewhere', () => {
    const a = deployment('a')
    const b = deployment('b')
    const router = new Router(null, { failureThreshold: 3 })

    failTimes(router, a, 2)
    const stillClosed = router.isOpen(a)
    failTimes(router, a, 1)

    expect(stillClosed).toBe(false)
    expect(router.isOpen(a)).toBe(true)
    expect(new Set(Array.from({ length: 50 }, () => router.pick(model([a, b])).id))).toEqual(new Set(['b']))
  })

  test('a success resets the count of consecutive failures', () => {
    const a = deployment('a')
    const router = new Router(null, { failureThreshold: 3 })

    failTimes(router, a, 2)
    router.acquire(a)
    router.release(a, 'success')
    failTimes(router, a, 2)

    expect(router.isOpen(a)).toBe(false)
  })

  test("neutral outcomes (the client's own mistakes) do not count", () => {
    const a = deployment('a')
    const router = new Router(null, { failureThreshold: 1 })

    router.acquire(a)
    router.release(a, 'neutral')

    expect(router.isOpen(a)).toBe(false)
  })

  test('half-opens after the cooldown for one probe, and closes when it succeeds', () => {
    const time = clock()
    const a = deployment('a')
    const router = new Router(null, { failureThreshold: 2, cooldownMs: 10_000, now: time.now })
    failTimes(router, a, 2)

    time.advance(9_999)
    const duringCooldown = caught(() => router.pick(model([a])))
    time.advance(1)
    const probe = router.pick(model([a]))
    router.acquire(probe)
    const whileProbing = caught(() => router.pick(model([a])))
    router.release(probe, 'success')

    expect((duringCooldown as GatewayError).code).toBe('no_healthy_backends')
    expect(probe).toBe(a)
    expect((whileProbing as GatewayError).code).toBe('no_healthy_backends')
    expect(router.isOpen(a)).toBe(false)
    expect(router.pick(model([a]))).toBe(a)
  })

  test('a failed probe opens the circuit for another cooldown', () => {
    const time = clock()
    const a = deployment('a')
    const router = new Router(null, { failureThreshold: 2, cooldownMs: 10_000, now: time.now })
    failTimes(router, a, 2)
    time.advance(10_000)

    router.acquire(router.pick(model([a])))
    router.release(a, 'failure')
    time.advance(9_999)
    const stillOpen = caught(() => router.pick(model([a])))
    time.advance(1)

    expect((stillOpen as GatewayError).code).toBe('no_healthy_backends')
    expect(router.pick(model([a]))).toBe(a)
  })
})

describe('isUpstreamFailure', () => {
  test('counts upstream errors and timeouts, not client mistakes or aborts', () => {
    const verdicts = [
      new GatewayError('no_healthy_backends'),
      new GatewayError('engine_unavailable'),
      new GatewayError('service_unavailable'),
      new DOMException('timed out', 'TimeoutError'),
      new GatewayError('invalid_request'),
      new DOMException('aborted', 'AbortError'),
    ].map(isUpstreamFailure)

    expect(verdicts).toEqual([true, true, true, true, false, false])
  })
})
