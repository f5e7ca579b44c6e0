import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import type { CatalogModel, Deployment } from '../../../server/core/catalog'
import { isUpstreamFailure, Router } from '../../../server/core/router'

function deployment(id: string, weight = 1, overrides: Partial<Deployment> = {}): Deployment {
  return {
    id,
    provider: 'simulator',
    baseUrl: null,
    upstreamModel: 'm',
    region: 'EG',
    weight,
    maxConcurrent: null,
    apiKeyEnv: null,
    developerRole: 'developer',
    timeouts: { connectMs: 1_000, firstTokenMs: 1_000, idleMs: 1_000, totalMs: 1_000 },
    circuit: { failures: 5, cooldownMs: 30_000 },
    simulator: { ttftMs: 0, interTokenMs: 0 },
    ...overrides,
  }
}

/** A deployment whose circuit opens after `failures` consecutive failures and cools down for `cooldownMs`. */
function fragile(id: string, failures: number, cooldownMs = 30_000): Deployment {
  return deployment(id, 1, { circuit: { failures, cooldownMs } })
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
    const a = fragile('a', 1)
    const router = new Router()
    failTimes(router, a, 1)

    const error = caught(() => router.pick(model([a])))

    expect(error).toBeInstanceOf(GatewayError)
    expect({ code: (error as GatewayError).code, status: (error as GatewayError).status, retryAfterS: (error as GatewayError).retryAfterS }).toEqual({ code: 'no_healthy_backends', status: 503, retryAfterS: 30 })
  })
})

describe('Router circuit breaker', () => {
  test('opens after N consecutive failures and sends traffic elsewhere', () => {
    const a = fragile('a', 3)
    const b = deployment('b')
    const router = new Router()

    failTimes(router, a, 2)
    const stillClosed = router.isOpen(a)
    failTimes(router, a, 1)

    expect(stillClosed).toBe(false)
    expect(router.isOpen(a)).toBe(true)
    expect(new Set(Array.from({ length: 50 }, () => router.pick(model([a, b])).id))).toEqual(new Set(['b']))
  })

  test('a success resets the count of consecutive failures', () => {
    const a = fragile('a', 3)
    const router = new Router()

    failTimes(router, a, 2)
    router.acquire(a)
    router.release(a, 'success')
    failTimes(router, a, 2)

    expect(router.isOpen(a)).toBe(false)
  })

  test("neutral outcomes (the client's own mistakes) do not count", () => {
    const a = fragile('a', 1)
    const router = new Router()

    router.acquire(a)
    router.release(a, 'neutral')

    expect(router.isOpen(a)).toBe(false)
  })

  test('half-opens after the cooldown for one trial request, and closes when it succeeds', () => {
    const time = clock()
    const a = fragile('a', 2, 10_000)
    const router = new Router({ now: time.now })
    failTimes(router, a, 2)

    time.advance(9_999)
    const duringCooldown = caught(() => router.pick(model([a])))
    time.advance(1)
    const trial = router.pick(model([a]))
    router.acquire(trial)
    const whileProbing = caught(() => router.pick(model([a])))
    router.release(trial, 'success')

    expect((duringCooldown as GatewayError).code).toBe('no_healthy_backends')
    expect(trial).toBe(a)
    expect((whileProbing as GatewayError).code).toBe('no_healthy_backends')
    expect(router.isOpen(a)).toBe(false)
    expect(router.pick(model([a]))).toBe(a)
  })

  test('a failed trial request opens the circuit for another cooldown', () => {
    const time = clock()
    const a = fragile('a', 2, 10_000)
    const router = new Router({ now: time.now })
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

describe('Router and max_concurrent', () => {
  test('never sends a deployment more than its max_concurrent requests at once; a full one gets no traffic', () => {
    const small = deployment('small', 100, { maxConcurrent: 2 })
    const big = deployment('big', 1)
    const router = new Router()

    const picked = Array.from({ length: 10 }, () => {
      const chosen = router.pick(model([small, big]))
      router.acquire(chosen)
      return chosen.id
    })

    expect(picked.filter((id) => id === 'small')).toHaveLength(2)
    expect([router.inFlight(small), router.inFlight(big)]).toEqual([2, 8])
  })

  test('answers 503 engine_unavailable with Retry-After 1 when every healthy deployment is full, and serves again once one has room', () => {
    const a = deployment('a', 1, { maxConcurrent: 1 })
    const b = deployment('b', 1, { maxConcurrent: 1 })
    const router = new Router()
    router.acquire(router.pick(model([a, b])))
    router.acquire(router.pick(model([a, b])))

    const error = caught(() => router.pick(model([a, b]))) as GatewayError
    router.release(a, 'success')

    expect({ code: error.code, status: error.status, retryAfterS: error.retryAfterS }).toEqual({ code: 'engine_unavailable', status: 503, retryAfterS: 1 })
    expect(router.pick(model([a, b]))).toBe(a)
  })

  test('a full deployment next to a broken one is still engine_unavailable; broken alone is no_healthy_backends', () => {
    const full = deployment('full', 1, { maxConcurrent: 1 })
    const broken = fragile('broken', 1)
    const router = new Router()
    failTimes(router, broken, 1)
    router.acquire(full)

    expect((caught(() => router.pick(model([full, broken]))) as GatewayError).code).toBe('engine_unavailable')
    expect((caught(() => router.pick(model([broken]))) as GatewayError).code).toBe('no_healthy_backends')
  })
})

describe('Router and maxUpstreamInFlight', () => {
  test("past the process's calls to upstreams, every deployment but the simulator's counts as full, across models, until one ends", () => {
    const a = deployment('a', 1, { provider: 'openai-compatible', baseUrl: 'http://a.test/v1' })
    const b = deployment('b', 1, { provider: 'openai-compatible', baseUrl: 'http://b.test/v1' })
    const simulated = deployment('simulated')
    const router = new Router({ maxUpstreamInFlight: 2 })
    router.acquire(router.pick(model([a])))
    router.acquire(router.pick(model([b])))
    router.acquire(router.pick(model([simulated])))

    const error = caught(() => router.pick(model([a, b]))) as GatewayError
    const stillSimulated = router.pick(model([simulated]))
    router.release(b, 'success')
    router.release(simulated, 'success')

    expect({ code: error.code, status: error.status, retryAfterS: error.retryAfterS }).toEqual({ code: 'engine_unavailable', status: 503, retryAfterS: 1 })
    expect(stillSimulated).toBe(simulated)
    expect(router.pick(model([a, b]))).toBe(b)
    router.acquire(b)
    expect((caught(() => router.pick(model([a]))) as GatewayError).code).toBe('engine_unavailable')
  })
})

describe('Router health by deployment id', () => {
  test("each deployment's circuit follows its own settings", () => {
    const time = clock()
    const touchy = fragile('touchy', 1, 1_000)
    const sturdy = fragile('sturdy', 3, 60_000)
    const router = new Router({ now: time.now })

    failTimes(router, touchy, 1)
    failTimes(router, sturdy, 3)
    time.advance(1_000)

    expect([router.circuit(touchy), router.circuit(sturdy)]).toEqual(['half_open', 'open'])
  })

  test('a new object for the same deployment id (a reloaded catalog) keeps its health and its requests in flight', () => {
    const before = fragile('a', 1)
    const router = new Router()
    router.acquire(before)
    failTimes(router, before, 1)
    const reloaded = { ...before, weight: 5 }

    const inFlightAfterReload = router.inFlight(reloaded)
    router.release(before, 'neutral')

    expect([router.isOpen(reloaded), inFlightAfterReload, router.inFlight(reloaded)]).toEqual([true, 1, 0])
  })
})

describe('Router.recordProbe', () => {
  test('a failed probe opens the circuit at once; the next probe that succeeds closes it', () => {
    const a = deployment('a')
    const b = deployment('b')
    const router = new Router()

    const opened = router.recordProbe(a, false)
    const picks = new Set(Array.from({ length: 20 }, () => router.pick(model([a, b])).id))
    const closed = router.recordProbe(a, true)

    expect([opened, closed]).toEqual(['opened', 'closed'])
    expect(picks).toEqual(new Set(['b']))
    expect(router.isOpen(a)).toBe(false)
  })

  test('failed probes keep restarting the cooldown, so no request is tried on a deployment that fails them', () => {
    const time = clock()
    const a = fragile('a', 1, 10_000)
    const router = new Router({ now: time.now })
    failTimes(router, a, 1)

    time.advance(8_000)
    const again = router.recordProbe(a, false)
    time.advance(8_000)

    expect(again).toBeNull()
    expect((caught(() => router.pick(model([a]))) as GatewayError).code).toBe('no_healthy_backends')
  })

  test('a probe that succeeds leaves a circuit that failed calls opened to its trial request', () => {
    const a = fragile('a', 1)
    const router = new Router()
    failTimes(router, a, 1)

    const change = router.recordProbe(a, true)

    expect(change).toBeNull()
    expect(router.isOpen(a)).toBe(true)
  })

  test('a circuit opened by calls and then confirmed by a failed probe closes when a probe succeeds', () => {
    const a = fragile('a', 1)
    const router = new Router()
    failTimes(router, a, 1)
    router.recordProbe(a, false)

    const change = router.recordProbe(a, true)

    expect(change).toBe('closed')
    expect(router.circuit(a)).toBe('closed')
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
