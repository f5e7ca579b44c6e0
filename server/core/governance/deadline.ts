import { GatewayError } from '@nilegate/shared/errors'
import { answerWithin, NoAnswerInTime } from '../answer-within'
import { governanceAreas, type Governance } from './index'

/**
 * The management API's stores with a deadline on every call. A database reached through a proxy
 * whose backend is down accepts connections and drops them, and postgres.js then leaves a query
 * pending for good (it reconnects in a loop): the dashboard would wait with it. A call that takes
 * longer than `timeoutMs` answers 503 service_unavailable; the call itself goes on, so a change
 * may still be made, which an Idempotency-Key's retry then finds.
 */
export function governanceWithDeadline(governance: Governance, timeoutMs: number): Governance {
  const bounded: Partial<Record<keyof Governance, unknown>> = {}
  for (const area of governanceAreas) bounded[area] = storeWithDeadline(governance[area], timeoutMs)
  return bounded as Governance
}

/** `store` with every method that answers a promise bounded by `timeoutMs`. */
export function storeWithDeadline<T extends object>(store: T, timeoutMs: number): T {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const answer: unknown = value.apply(target, args)
        if (!(answer instanceof Promise)) return answer
        return answerWithin(answer, timeoutMs, 'the database').catch((error: unknown) => {
          if (error instanceof NoAnswerInTime) throw new GatewayError('service_unavailable', 'The database is not answering. Retry in 30 to 60 seconds.')
          throw error
        })
      }
    },
  })
}
