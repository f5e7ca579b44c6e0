import { redisFailure, withDeadline } from './client'
import type { RedisConnection } from './connect-redis'

/**
 * A lease on a periodic task shared by every instance on one Redis: `claim(holdMs)` answers true
 * to the first instance that asks while no lease runs, and holds the lease for `holdMs` (SET NX
 * PX), so the task runs about once per period across the fleet instead of once per instance.
 */
export function redisPassLease(client: RedisConnection, key: string, commandTimeoutMs = 1_000): (holdMs: number) => Promise<boolean> {
  const holder = crypto.randomUUID()
  return async (holdMs) => {
    try {
      return (await withDeadline(client.set(key, holder, { NX: true, PX: holdMs }), commandTimeoutMs)) === 'OK'
    } catch (error) {
      throw redisFailure(error)
    }
  }
}
