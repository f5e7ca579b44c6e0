// What bench/ledger.ts measures after each step: the ledger's size, the waits of the usage reports
// and the balance, the rebuild of admission counters after a start, and `reconcile`.

import type { SQL } from 'bun'
import type { DemoCredentials } from './gateway-process'
import { runCli, startLedgerGateway, startRedis, type LedgerGateway, type LedgerGatewayLaunch } from './ledger-gateway'
import { measuredHistoryDays } from './ledger-rows'
import { percentile } from './percentile'

const dayS = 24 * 60 * 60

export interface LedgerSizes {
  rows: number
  partitionBytes: number
  /** The whole database (pg_database_size), which is what the disk must hold. */
  databaseBytes: number
  rollups: { table: string; rows: number; bytes: number }[]
}

const rollupTables = ['usage_rollup_quarters', 'usage_rollup_hours', 'usage_rollup_days', 'usage_totals']

/** ANALYZE of the ledger and its sums, as an operator's maintenance would leave them. */
export async function analyzeLedger(sql: SQL): Promise<void> {
  await sql.unsafe(`ANALYZE usage_events, ${rollupTables.join(', ')}`)
}

/** Rows of usage_events, bytes of all its partitions with their indexes and of the database, and the sums' rows and bytes. */
export async function measureSizes(sql: SQL): Promise<LedgerSizes> {
  const [{ rows }] = await sql`SELECT count(*)::bigint::text AS rows FROM usage_events`
  const [{ bytes }] = await sql`SELECT COALESCE(sum(pg_total_relation_size(inhrelid)), 0)::bigint::text AS bytes FROM pg_inherits WHERE inhparent = 'usage_events'::regclass`
  const [{ database }] = await sql`SELECT pg_database_size(current_database())::text AS database`
  const rollups = []
  for (const table of rollupTables) {
    const [row] = await sql.unsafe(`SELECT count(*)::bigint::text AS rows, pg_total_relation_size('${table}')::bigint::text AS bytes FROM ${table}`)
    rollups.push({ table, rows: Number(row.rows), bytes: Number(row.bytes) })
  }
  return { rows: Number(rows), partitionBytes: Number(bytes), databaseBytes: Number(database), rollups }
}

/** The measured organization's rows in the range its 30-day reports read. */
export async function rowsInRange(sql: SQL, orgId: string, fromS: number): Promise<number> {
  const [{ rows }] = await sql`SELECT count(*)::bigint::text AS rows FROM usage_events WHERE org_id = ${orgId} AND created_at >= to_timestamp(${fromS})`
  return Number(rows)
}

/** A first call and the median of `repeats` more, in ms. */
export interface Timing {
  firstMs: number
  medianMs: number
}

function median(samples: number[]): number {
  return percentile([...samples].sort((a, b) => a - b), 50)
}

/** Sends the request `1 + repeats` times one after another; each must answer 200. Returns the timing and the first answer's body. */
async function timeRequest(url: string, init: () => RequestInit, repeats = 5): Promise<Timing & { body: any }> {
  const samples: number[] = []
  let body: any = null
  for (let attempt = 0; attempt <= repeats; attempt++) {
    const startedAt = performance.now()
    const response = await fetch(url, init())
    const text = await response.text()
    samples.push(performance.now() - startedAt)
    if (response.status !== 200) throw new Error(`${init().method ?? 'GET'} ${url}: ${response.status} ${text.slice(0, 500)}`)
    body ??= JSON.parse(text)
  }
  return { firstMs: samples[0]!, medianMs: median(samples.slice(1)), body }
}

/** Signs in as the tenant's owner: the headers of the management API, and the organization's id. */
export async function signIn(baseUrl: string, tenant: DemoCredentials): Promise<{ headers: Record<string, string>; orgId: string }> {
  const login = await fetch(`${baseUrl}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: tenant.email, password: tenant.password }) })
  if (login.status !== 200) throw new Error(`POST /v1/auth/login: ${login.status} ${(await login.text()).slice(0, 500)}`)
  const { access_token: token } = (await login.json()) as { access_token: string }
  const me = await fetch(`${baseUrl}/auth/me`, { headers: { authorization: `Bearer ${token}` } })
  if (me.status !== 200) throw new Error(`GET /v1/auth/me: ${me.status} ${(await me.text()).slice(0, 500)}`)
  const { memberships } = (await me.json()) as { memberships: { organization_id: string }[] }
  const orgId = memberships[0]!.organization_id
  return { headers: { authorization: `Bearer ${token}`, 'openai-organization': orgId }, orgId }
}

export interface ReportTimings {
  daysByModel: Timing
  daysByKey: Timing
  hoursByModel: Timing
  balance: Timing
  /** Requests the 30-day report by model counts: checks that it reads the history. */
  reportedRequests: number
}

/** The usage page (30 days by model and by key, 7 days of hours by model) and the balance. */
export async function measureReports(baseUrl: string, headers: Record<string, string>, nowS: number): Promise<ReportTimings> {
  const get = () => ({ headers })
  const days = `${baseUrl}/organization/usage/completions?start_time=${nowS - measuredHistoryDays * dayS}&bucket_width=1d&limit=31`
  const daysByModel = await timeRequest(`${days}&group_by=model`, get)
  const daysByKey = await timeRequest(`${days}&group_by=api_key_id`, get)
  const hoursByModel = await timeRequest(`${baseUrl}/organization/usage/completions?start_time=${nowS - 7 * dayS}&bucket_width=1h&limit=168&group_by=model`, get)
  const balance = await timeRequest(`${baseUrl}/organization/balance`, get)
  let reportedRequests = 0
  for (const bucket of daysByModel.body.data) for (const result of bucket.results) reportedRequests += result.num_model_requests
  return { daysByModel, daysByKey, hoursByModel, balance, reportedRequests }
}

export interface RebuildTimings {
  /** Median over the restarts of the first chat request after a start. */
  firstMs: number
  /** Median over the restarts of the median of the next requests. */
  nextMs: number
  /** Median over the restarts of the time from spawning the gateway to its first answer. */
  startMs: number
}

const chatBody = JSON.stringify({ model: 'bench/simulated', max_tokens: 1, messages: [{ role: 'user', content: 'Say hi.' }] })

/**
 * Stops the gateway and starts it again `restarts` times; after each start, times the first chat
 * request of the tenant's key (which rebuilds the organization's admission counters from the
 * ledger) against the next ones. Returns the timings and the gateway last started.
 */
export async function measureRebuild(gateway: LedgerGateway, launch: LedgerGatewayLaunch, apiKey: string, restarts = 3): Promise<{ timings: RebuildTimings; gateway: LedgerGateway }> {
  const first: number[] = []
  const next: number[] = []
  const starts: number[] = []
  let current = gateway
  for (let restart = 0; restart < restarts; restart++) {
    await current.stop()
    current = await startLedgerGateway(launch)
    starts.push(current.startMs)
    const post = () => ({ method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: chatBody })
    const timing = await timeRequest(`${current.baseUrl}/chat/completions`, post)
    first.push(timing.firstMs)
    next.push(timing.medianMs)
  }
  return { timings: { firstMs: median(first), nextMs: median(next), startMs: median(starts) }, gateway: current }
}

export interface ReconcileTimings {
  /** `reconcile` into an empty Redis: every organization's counters rebuilt from the ledger. */
  rebuildMs: number
  /** `reconcile --dry-run` over those counters: every organization compared with the ledger. */
  dryRunMs: number
  /** Its summary line. */
  summary: string
}

/**
 * `bun server/cli.ts reconcile` against a fresh Redis (which rebuilds every organization's
 * counters), then `reconcile --dry-run` (which compares them with the ledger); null without
 * redis-server. On an empty Redis a dry run alone would only find every organization absent.
 */
export async function measureReconcile(launch: LedgerGatewayLaunch): Promise<ReconcileTimings | null> {
  const redis = await startRedis(launch.processes, launch.workDir)
  if (!redis) return null
  try {
    const env = { DATABASE_URL: launch.databaseUrl, REDIS_URL: redis.url, NILEGATE_CONFIG: launch.catalogPath }
    const rebuild = await runCli(launch, ['reconcile'], env)
    if (rebuild.code !== 0) throw new Error(`bun server/cli.ts reconcile exited with ${rebuild.code}:\n${rebuild.output.slice(-2000)}`)
    const dryRun = await runCli(launch, ['reconcile', '--dry-run'], env)
    if (dryRun.code !== 0) throw new Error(`bun server/cli.ts reconcile --dry-run exited with ${dryRun.code}:\n${dryRun.output.slice(-2000)}`)
    const summary = dryRun.output.trim().split('\n').findLast((line) => line.includes('organizations checked')) ?? '(no summary printed)'
    return { rebuildMs: rebuild.wallMs, dryRunMs: dryRun.wallMs, summary }
  } finally {
    await redis.stop()
  }
}
