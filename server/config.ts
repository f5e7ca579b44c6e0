import { t } from 'elysia'
import { Value } from '@sinclair/typebox/value'

const Env = t.Object({
  HOST: t.String({ default: '127.0.0.1' }),
  PORT: t.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  /** Public base URL printed for users; defaults to http://HOST:PORT/v1. */
  PUBLIC_BASE_URL: t.Optional(t.String()),
  DATA_DIR: t.String({ default: './data' }),
  DATABASE_URL: t.Optional(t.String({ minLength: 1 })),
  NILEGATE_CONFIG: t.Optional(t.String({ minLength: 1 })),
  /** Redis for admission counters shared by every gateway; the in-process store when unset. */
  REDIS_URL: t.Optional(t.String({ minLength: 1 })),
  /** Comma-separated addresses or CIDRs (v4, v6) of proxies whose X-Forwarded-For is believed. */
  TRUSTED_PROXIES: t.String({ default: '' }),
  /** Bytes of request bodies that may be in flight at once before 503 large_request_backpressure. */
  BODY_BUDGET_BYTES: t.Integer({ minimum: 1, default: 256 * 1024 * 1024 }),
  /** Milliseconds between usage batch flushes. */
  USAGE_FLUSH_MS: t.Integer({ minimum: 1, default: 200 }),
  LOG_REQUESTS: t.Boolean({ default: false }),
  /** Seconds between passes that reconcile admission counters with the ledger; 0 turns them off. */
  RECONCILE_INTERVAL_S: t.Integer({ minimum: 0, default: 300 }),
})

export interface Config {
  host: string
  port: number
  publicBaseUrl: string | null
  dataDir: string
  databaseUrl: string | null
  redisUrl: string | null
  catalogPath: string | null
  trustedProxies: string[]
  bodyBudgetBytes: number
  usageFlushMs: number
  logRequests: boolean
  reconcileIntervalS: number
}

/** Reads the gateway's configuration from the environment; throws a readable error on bad values. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([key, value]) => key in Env.properties && value !== ''))
  const converted = Value.Convert(Env, Value.Default(Env, present))
  if (!Value.Check(Env, converted)) {
    const [first] = Value.Errors(Env, converted)
    throw new Error(`bad environment: ${first?.path.slice(1)} ${first?.message}`)
  }
  const parsed = converted as typeof Env.static
  return {
    host: parsed.HOST,
    port: parsed.PORT,
    publicBaseUrl: parsed.PUBLIC_BASE_URL ?? null,
    dataDir: parsed.DATA_DIR,
    databaseUrl: parsed.DATABASE_URL ?? null,
    redisUrl: parsed.REDIS_URL ?? null,
    catalogPath: parsed.NILEGATE_CONFIG ?? null,
    trustedProxies: parsed.TRUSTED_PROXIES.split(',').map((ip) => ip.trim()).filter(Boolean),
    bodyBudgetBytes: parsed.BODY_BUDGET_BYTES,
    usageFlushMs: parsed.USAGE_FLUSH_MS,
    logRequests: parsed.LOG_REQUESTS,
    reconcileIntervalS: parsed.RECONCILE_INTERVAL_S,
  }
}
