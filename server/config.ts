import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { networkInterfaces } from 'node:os'
import { logLevels, type LogLevel } from './observability/log-level'
import { maxLeaseMs } from './adapters/redis/admission-leases'

// Integers use TypeBox's own Integer: Elysia's accepts numeric strings as they are, so `Value.Convert`
// would leave '3000' a string and arithmetic on it would concatenate.
const Env = t.Object({
  HOST: t.String({ default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
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
  BODY_BUDGET_BYTES: Type.Integer({ minimum: 1, default: 256 * 1024 * 1024 }),
  /** Milliseconds between usage batch flushes. */
  USAGE_FLUSH_MS: Type.Integer({ minimum: 1, default: 1000 }),
  /** Usage events waiting to be written at which new requests are refused with 503, until half are. */
  USAGE_MAX_PENDING: Type.Integer({ minimum: 1, default: 500_000 }),
  /** The least severe log lines written: fatal, error, warn, info (one line a request), debug, trace, or silent. */
  LOG_LEVEL: t.Union(logLevels.map((level) => t.Literal(level)), { default: 'info' }),
  /** `off` stops recording metrics (GET /metrics then answers 404). */
  METRICS: t.Union([t.Literal('on'), t.Literal('off')], { default: 'on' }),
  /** A bearer token GET /metrics requires when set; open to anyone who reaches it when unset. */
  METRICS_TOKEN: t.Optional(t.String({ minLength: 1 })),
  /** Mail server for verification mails (smtp://user:pass@host:587, smtps://...:465); printed to the console when unset. */
  SMTP_URL: t.Optional(t.String({ pattern: '^smtps?://' })),
  /** The sender of the gateway's mail. */
  MAIL_FROM: t.String({ minLength: 3, default: 'nilegate <no-reply@localhost>' }),
  /** Seconds between passes that reconcile admission counters with the ledger; 0 turns them off. */
  RECONCILE_INTERVAL_S: Type.Integer({ minimum: 0, default: 300 }),
  /** Milliseconds a hold outlives its request's longest possible run before it is released on its own. */
  RESERVATION_MARGIN_MS: Type.Integer({ minimum: 1, default: 60_000 }),
  /**
   * With REDIS_URL: milliseconds a lease lasts, in which this gateway admits a busy key's requests
   * from slots and money Redis set aside for it, without a script run each (docs/billing.md); 0
   * (the default) sends every admission to Redis.
   */
  ADMISSION_LEASE_MS: Type.Integer({ minimum: 0, maximum: maxLeaseMs, default: 0 }),
  /**
   * Whether a start on an empty database creates a demo organization with credit and prints its key:
   * unset, only on the embedded defaults (no DATABASE_URL, a catalog served by the simulator alone).
   */
  DEMO_TENANT: t.Optional(t.Boolean()),
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
  usageMaxPending: number
  logLevel: LogLevel
  metrics: boolean
  metricsToken: string | null
  smtpUrl: string | null
  mailFrom: string
  reconcileIntervalS: number
  reservationMarginMs: number
  admissionLeaseMs: number
  /** DEMO_TENANT as set (true or false), or null when unset: see `wantsDemoTenant`. */
  demoTenant: boolean | null
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
    usageMaxPending: parsed.USAGE_MAX_PENDING,
    logLevel: parsed.LOG_LEVEL,
    metrics: parsed.METRICS === 'on',
    metricsToken: parsed.METRICS_TOKEN ?? null,
    smtpUrl: parsed.SMTP_URL ?? null,
    mailFrom: parsed.MAIL_FROM,
    reconcileIntervalS: parsed.RECONCILE_INTERVAL_S,
    reservationMarginMs: parsed.RESERVATION_MARGIN_MS,
    admissionLeaseMs: parsed.ADMISSION_LEASE_MS,
    demoTenant: parsed.DEMO_TENANT ?? null,
  }
}

/**
 * Whether this start may create the demo organization (1,000,000 EGP of credit, its key printed to
 * the log) on an empty database. Unasked, only a try-out does: the embedded database and a catalog
 * the simulator serves alone. A start on Postgres, or with real upstreams to spend money on, is
 * someone's deployment, whose log others read and whose first organization an operator creates.
 */
export function wantsDemoTenant(config: Pick<Config, 'demoTenant' | 'databaseUrl'>, models: ReadonlyArray<{ deployments: ReadonlyArray<{ provider: string }> }>): boolean {
  if (config.demoTenant !== null) return config.demoTenant
  return config.databaseUrl === null && models.every((model) => model.deployments.every((deployment) => deployment.provider === 'simulator'))
}

/** How the upstream requests fetch may send at once are shared out (`upstreamFetchBudget`). */
export interface UpstreamFetchBudget {
  /** Whether BUN_CONFIG_MAX_HTTP_REQUESTS was set to a usable value (else Bun's 256 applies). */
  set: boolean
  /** Calls to upstreams (chat, embeddings) the router lets run at once. */
  calls: number
  /** Health probes run at once, on places calls never take. */
  probes: number
}

/**
 * Shares out the requests Bun's fetch sends at once (BUN_CONFIG_MAX_HTTP_REQUESTS, read when the
 * process starts; 256 unless set, at most 65535). Past that many, fetch holds requests unsent while
 * their deadlines run: a call held there would time out against a healthy deployment, and so would a
 * probe held behind calls, taking the deployment out. So calls stop short of a reserve that only
 * probes use: a sixteenth of the limit, between 1 and 16.
 */
export function upstreamFetchBudget(setting: string | undefined): UpstreamFetchBudget {
  // Unset, empty and blank all read as NaN or 0.
  const value = Number(setting)
  const set = Number.isInteger(value) && value >= 1
  const limit = set ? Math.min(value, 65_535) : 256
  // With a limit of 1 there is nothing to share: calls and probes both get it.
  const probes = limit < 2 ? 1 : Math.min(16, Math.max(1, Math.floor(limit / 16)))
  return { set, calls: Math.max(1, limit - probes), probes }
}

/** HOST values that name this machine whatever its interfaces. */
const alwaysLocal = new Set(['0.0.0.0', '::', 'localhost', '127.0.0.1', '::1'])

/**
 * Why the server could not listen on HOST:PORT, in the settings' terms. Bun's error code does not
 * tell them apart (a name that resolves to no address of this machine has come back as EINVAL,
 * EEXIST and EADDRINUSE), so the host is judged by this machine's addresses.
 */
export function listenFailure(error: unknown, host: string, port: number): Error {
  const code = (error as { code?: unknown } | null)?.code
  const hostIsLocal = alwaysLocal.has(host) || Object.values(networkInterfaces()).some((addresses) => addresses?.some(({ address }) => address === host))
  const badHost = `HOST ${host} is not an address of this machine, nor a name of one: set HOST to one (127.0.0.1, or 0.0.0.0 for every interface)`
  const portTaken = `port ${port} is in use by another process: stop it, or set PORT to a free port (0 picks one)`
  if (hostIsLocal && code === 'EADDRINUSE') return new Error(portTaken)
  if (!hostIsLocal && (port === 0 || code === 'EADDRNOTAVAIL')) return new Error(badHost)
  if (!hostIsLocal) return new Error(`${portTaken}, or ${badHost}`)
  return error instanceof Error ? error : new Error(String(error))
}
