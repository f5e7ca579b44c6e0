import { tracingChannel } from 'node:diagnostics_channel'
import type { GatewayDatabase } from '../adapters/postgres/database'
import type { GatewayMetrics } from './gateway-metrics'

/** What node-redis tells the tracing channel of a command (and what this module adds to it). */
interface RedisCommandTrace {
  command?: string
  startedAt?: number
  error?: unknown
}

/** node-redis's channel for commands (its lib/client/tracing.js): every client and cluster node of the process. */
const redisCommandChannel = 'node-redis:command'

/**
 * Times every Redis command of the process, from sent to answered, through node-redis's tracing
 * channel: no adapter is wrapped, and a cluster's node clients are timed as one server's. Returns
 * the function that stops it.
 */
export function timeRedisCommands(metrics: GatewayMetrics): () => void {
  const channel = tracingChannel<RedisCommandTrace>(redisCommandChannel)
  const handlers = {
    start(trace: RedisCommandTrace) {
      trace.startedAt = performance.now()
    },
    end() {},
    asyncStart() {},
    asyncEnd(trace: RedisCommandTrace) {
      if (trace.startedAt === undefined) return
      const command = trace.command ?? 'other'
      metrics.redisCommand(command).observe((performance.now() - trace.startedAt) / 1000)
      if (trace.error !== undefined) metrics.redisFailed(command)
    },
    error() {},
  }
  channel.subscribe(handlers)
  return () => channel.unsubscribe(handlers)
}

/** `call`, its calls timed under `operation`. */
function timedCall<A extends unknown[], R>(call: (...args: A) => Promise<R>, operation: string, metrics: GatewayMetrics): (...args: A) => Promise<R> {
  const series = metrics.databaseCall(operation)
  return async (...args) => {
    const startedAt = performance.now()
    try {
      return await call(...args)
    } catch (error) {
      metrics.databaseFailed(operation)
      throw error
    } finally {
      series.observe((performance.now() - startedAt) / 1000)
    }
  }
}

/** `store` with each of its methods timed (see `timedCall`) under `operation(method)`; each wrapped once, on first use. */
function timed<T extends object>(store: T, metrics: GatewayMetrics, operation: (method: string) => string): T {
  const wrapped = new Map<string, unknown>()
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (typeof value !== 'function' || typeof property !== 'string' || property === 'then') return value
      let method = wrapped.get(property)
      if (method === undefined) wrapped.set(property, (method = timedCall((...args: unknown[]) => (value as (...args: unknown[]) => Promise<unknown>).apply(target, args), operation(property), metrics)))
      return method
    },
  })
}

/**
 * The database with its calls timed: the hot path's by method (`identities.findApiKeyByHash`,
 * `usage.insertUsageEvents`, `ledger.readCounters`, ...), the management API's by area
 * (`governance.projects`), so that the operations stay a short list.
 */
export function timeDatabase<T extends GatewayDatabase>(database: T, metrics: GatewayMetrics): T {
  const governance = Object.fromEntries(Object.entries(database.governance).map(([area, store]) => [area, timed(store as object, metrics, () => `governance.${area}`)]))
  return {
    ...database,
    identities: timed(database.identities, metrics, (method) => `identities.${method}`),
    usage: timed(database.usage, metrics, (method) => `usage.${method}`),
    ledger: timed(database.ledger, metrics, (method) => `ledger.${method}`),
    governance: governance as unknown as GatewayDatabase['governance'],
    hasOrganizations: timedCall(database.hasOrganizations, 'hasOrganizations', metrics),
    listBillingAccounts: timedCall(database.listBillingAccounts, 'listBillingAccounts', metrics),
  }
}
