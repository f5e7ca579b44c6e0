import { GatewayError } from '@nilegate/shared/errors'

/** SPEC 8.1 rule 7: per key, at most 100 requests in any second and 400 at once, in each gateway process. */
export const edgeRequestsPerSecond = 100
export const edgeConcurrentRequests = 400
const edgeMessage = 'Too many requests at the edge; retry after 1 second.'
const idleForgetMs = 10_000
const sweepEvery = 10_000

interface KeyState {
  /** When the last `perSecond` requests arrived, as a ring: the slot at `next` is the oldest. */
  arrivals: Float64Array
  next: number
  inFlight: number
  lastSeenMs: number
}

function edgeRefusal(): GatewayError {
  return new GatewayError('rate_limit_exceeded', edgeMessage, null, 1)
}

/**
 * The in-process burst guard in front of everything else: an exact sliding one-second window per
 * key (a ring of the last N arrival times: a request is refused when the Nth-latest arrival is less
 * than a second old) and a count of requests in flight. Keys are held by the hash of their secret,
 * so the guard works before the key is looked up. Idle keys are forgotten.
 */
export class EdgeLimiter {
  private readonly keys = new Map<string, KeyState>()
  private calls = 0

  constructor(
    private readonly perSecond = edgeRequestsPerSecond,
    private readonly concurrent = edgeConcurrentRequests,
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /** Counts a request of the key, or throws the edge 429 (Retry-After: 1) when it is over the rate. */
  admit(keyHash: string): void {
    const now = this.now()
    if (++this.calls % sweepEvery === 0) this.forgetIdle(now)
    let state = this.keys.get(keyHash)
    if (!state) {
      state = { arrivals: new Float64Array(this.perSecond).fill(Number.NEGATIVE_INFINITY), next: 0, inFlight: 0, lastSeenMs: now }
      this.keys.set(keyHash, state)
    }
    state.lastSeenMs = now
    if (now - state.arrivals[state.next]! < 1_000) throw edgeRefusal()
    state.arrivals[state.next] = now
    state.next = (state.next + 1) % this.perSecond
  }

  /** Holds one of the key's in-flight places; the returned function gives it back (once). */
  acquire(keyHash: string): () => void {
    const state = this.keys.get(keyHash)
    if (!state) return () => {}
    if (state.inFlight >= this.concurrent) throw edgeRefusal()
    state.inFlight++
    let released = false
    return () => {
      if (released) return
      released = true
      state.inFlight--
    }
  }

  private forgetIdle(now: number): void {
    for (const [keyHash, state] of this.keys) {
      if (state.inFlight === 0 && now - state.lastSeenMs > idleForgetMs) this.keys.delete(keyHash)
    }
  }
}
