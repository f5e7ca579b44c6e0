import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import OpenAI from 'openai'
import postgres from 'postgres'
import { createClient } from 'redis'
import { admissionScripts } from '../../server/adapters/redis/admission-scripts'
import { RedisAdmissionStore } from '../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis, type RedisClient } from '../../server/adapters/redis/client'
import { billingMonth, defaultBillingTimeZone, type OrgSnapshot } from '../../server/core/admission'
import { formatEgp, parseEgp } from '../../server/core/money'
import { createPostgresDatabase } from '../support/databases'
import { forgetOrganizations } from '../support/forget-organizations'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { testRedisUrl } from '../support/redis-server'
import { waitFor } from '../support/wait-for'

// Two gateways share one Postgres and one Redis (a database index of its own unless TEST_REDIS_URL
// names one): admission must hold across them (DESIGN.md I1), at two Redis commands per request.
const model = 'nile/qwen2.5-7b-instruct'
// The hold of one request below (core/hold-bound.ts): a prompt bound of 283 tokens (11 bytes, 16 for
// the message, 256 for the request) at 5 EGP/1M plus 1,000 output tokens at 15 EGP/1M = 16,415 micro-EGP.
const worstCaseMicros = 16_415
const k = 23

let database: Awaited<ReturnType<typeof createPostgresDatabase>>
let gateways: RunningGateway[] = []
let workDir: string
let redis: RedisClient
let redisUrl: string

const egp = (micros: number) => formatEgp(BigInt(micros))

/** A demo tenant whose credit, or whose key's or project's monthly cap, is the limit under test. */
interface TenantSetup {
  balanceEgp?: string
  keyCapEgp?: string
  projectCapEgp?: string
}

async function manage(gateway: RunningGateway, token: string | null, path: string, body: unknown) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) }
  const response = await fetch(`${gateway.baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
  const json = (await response.json()) as any
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

/** A new tenant set up through the management API, with `keys` API keys in its project. */
async function setUpTenant(gateway: RunningGateway, setup: TenantSetup & { keys: number }) {
  const tenant = await gateway.createDemoTenant({ balanceEgp: setup.balanceEgp ?? '1000', rpm: 100_000 })
  const login = await manage(gateway, null, '/auth/login', { email: tenant.email, password: tenant.password })
  const token = login.access_token as string
  const projectPath = `/organization/projects/${tenant.project_id}`
  if (setup.projectCapEgp !== undefined) await manage(gateway, token, projectPath, { monthly_spend_cap_egp: setup.projectCapEgp })
  const newKey = async (index: number) => {
    const key = await manage(gateway, token, `${projectPath}/api_keys`, { name: `load ${index}`, rpm_limit: 100_000, monthly_spend_cap_egp: setup.keyCapEgp ?? null })
    return key.value as string
  }
  // A capped key is made for the case; otherwise the demo key is one of them.
  const made = await Promise.all(Array.from({ length: setup.keyCapEgp === undefined ? setup.keys - 1 : setup.keys }, (_, i) => newKey(i)))
  return { orgId: tenant.organization_id, projectId: tenant.project_id, apiKeys: setup.keyCapEgp === undefined ? [tenant.api_key, ...made] : made }
}

/** The organization's credits and usage rows, once `rows` rows are there: a row is written after its settlement. */
async function waitForLedger(orgId: string, rows: number) {
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  try {
    let found: Array<{ key_id: string; count: number; spent: string }> = []
    await waitFor(
      async () => {
        found = await sql`SELECT key_id, count(*)::int AS count, sum(cost_micros)::text AS spent FROM usage_events WHERE org_id = ${orgId} GROUP BY key_id`
        return found.reduce((sum, row) => sum + row.count, 0) === rows
      },
      { what: `${rows} usage rows`, timeoutMs: 20_000 },
    )
    const [credit] = await sql<Array<{ total: string }>>`SELECT COALESCE(sum(amount_micros), 0)::text AS total FROM credit_transactions WHERE org_id = ${orgId}`
    const keySpend = Object.fromEntries(found.map((row) => [row.key_id, BigInt(row.spent)]))
    return { creditMicros: BigInt(credit!.total), debitMicros: Object.values(keySpend).reduce((sum, spent) => sum + spent, 0n), keySpend }
  } finally {
    await sql.end()
  }
}

/** The organization's admission counters in Redis for this month. */
async function countersOf(orgId: string): Promise<OrgSnapshot> {
  const snapshot = await new RedisAdmissionStore(redis).snapshot(orgId, billingMonth(Date.now(), defaultBillingTimeZone))
  if (!snapshot) throw new Error(`no admission counters in Redis for ${orgId}`)
  return snapshot
}

beforeAll(async () => {
  redisUrl = await testRedisUrl(11)
  database = await createPostgresDatabase()
  workDir = mkdtempSync(join(tmpdir(), 'nilegate-shared-'))
  redis = createRedisClient(redisUrl, { log: () => {} })
  await waitForRedis(redis, 5_000)
  // The demo catalog with a slow first token, so every request is admitted or refused before any
  // settles (a settled request gives back what its worst case held beyond its cost).
  const catalog = await Bun.file(new URL('../../server/demo-catalog.json', import.meta.url)).json()
  for (const entry of catalog.models) for (const deployment of entry.deployments) deployment.simulator = { ttft_ms: 2_500, inter_token_ms: 0 }
  const catalogPath = join(workDir, 'catalog.json')
  writeFileSync(catalogPath, JSON.stringify(catalog))
  const options = { database: 'postgres' as const, sharedDatabaseUrl: database.url, catalogPath, env: { REDIS_URL: redisUrl, USAGE_FLUSH_MS: '20' } }
  gateways.push(await startGateway(options))
  gateways.push(await startGateway(options))
}, 90_000)

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()))
  gateways = []
  redis?.destroy()
  if (database) await forgetOrganizations(redisUrl, database.url)
  await database?.drop()
  rmSync(workDir, { recursive: true, force: true })
}, 60_000)

describe('two gateways on one Redis and one Postgres', () => {
  // Five keys in the tenant's project unless a case says otherwise: the edge guard holds a key to
  // 100 requests a second in each gateway (SPEC 8.1), which is not what these cases test.
  const cases: Array<{ limit: string; code: string; keys: number; tenant: (k: number) => TenantSetup }> = [
    { limit: 'the balance', code: 'insufficient_balance', keys: 5, tenant: (k) => ({ balanceEgp: egp(k * worstCaseMicros) }) },
    { limit: "a key's monthly cap", code: 'spending_cap_reached', keys: 1, tenant: (k) => ({ keyCapEgp: egp(k * worstCaseMicros) }) },
    { limit: "a project's monthly cap", code: 'project_spend_cap_exceeded', keys: 5, tenant: (k) => ({ projectCapEgp: egp(k * worstCaseMicros) }) },
  ]

  for (const { limit, code, keys, tenant } of cases) {
    test(`500 requests at once over both against ${limit} covering exactly K worst cases: exactly K run, nothing goes below zero, and the counters equal the ledger`, async () => {
      const { orgId, projectId, apiKeys } = await setUpTenant(gateways[0]!, { ...tenant(k), keys })
      const clients = gateways.flatMap((gateway) => apiKeys.map((apiKey) => new OpenAI({ baseURL: gateway.baseUrl, apiKey, maxRetries: 0 })))

      const outcomes = await Promise.all(
        Array.from({ length: 500 }, (_, i) =>
          clients[i % clients.length]!.chat.completions
            .create({ model, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 1_000 })
            .then(() => 'admitted')
            .catch((error: { status?: number; code?: string }) => `${error.status} ${error.code}`),
        ),
      )

      const tally = Object.fromEntries([...new Set(outcomes)].map((outcome) => [outcome, outcomes.filter((other) => other === outcome).length]))
      // One key alone meets the edge guard: at most 100 a second of it reach admission in each gateway.
      const { '429 rate_limit_exceeded': edgeRefused = 0, ...rest } = tally
      expect(rest).toEqual({ admitted: k, [`402 ${code}`]: 500 - k - edgeRefused })
      expect(keys === 1 ? edgeRefused <= 300 : edgeRefused === 0).toBe(true)

      // Every admitted request settles and leaves its row; then both books agree to the micro-EGP.
      const ledger = await waitForLedger(orgId, k)
      const counters = await countersOf(orgId)
      expect({ balance: counters.balanceMicros, held: counters.heldMicros }).toEqual({ balance: ledger.creditMicros - ledger.debitMicros, held: 0n })
      expect(counters.balanceMicros >= 0n).toBe(true)
      expect(Object.fromEntries(counters.keySpend)).toEqual(ledger.keySpend)
      expect(Object.fromEntries(counters.projectSpend)).toEqual({ [projectId]: ledger.debitMicros })
      const cap = tenant(k).keyCapEgp ?? tenant(k).projectCapEgp
      if (cap !== undefined) expect(ledger.debitMicros <= parseEgp(cap)).toBe(true)
    }, 60_000)
  }

  test('a request costs at most two Redis round trips on its way: an admit script (none under a lease), then a settle script, each of which it may share', async () => {
    const apiKey = await gateways[0]!.createApiKey({ rpm: 100_000 })
    const client = new OpenAI({ baseURL: gateways[0]!.baseUrl, apiKey, maxRetries: 0 })
    const ask = () => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 16 })
    const sql = postgres(database.url, { max: 1, onnotice: () => {} })
    const usageRows = async (id: string) => (await sql<Array<{ count: number }>>`SELECT count(*)::int AS count FROM usage_events WHERE org_id = (SELECT org_id FROM usage_events WHERE request_id = ${id})`)[0]!.count
    // The organization's first request rebuilds its counters from the ledger: that is not the hot path.
    const { _request_id: firstId } = await ask()
    await waitFor(async () => (await usageRows(firstId!)) === 1, { what: 'the first usage row' })
    const monitor = createClient({ url: redisUrl })
    await monitor.connect()
    const commands: string[] = []
    const requests = 20
    try {
      await monitor.monitor((line) => commands.push(line))
      await Promise.all(Array.from({ length: requests }, ask))
      // A usage row is written once its settlement is answered: all rows there, all settled.
      await waitFor(async () => (await usageRows(firstId!)) === requests + 1, { what: 'the usage rows' })
    } finally {
      monitor.destroy()
      await sql.end()
    }

    // What the gateways sent to this database, leaving out the commands scripts ran inside Redis.
    const inDatabase = new RegExp(`\\[${new URL(redisUrl).pathname.slice(1) || '0'} [\\d[]`)
    const sent = commands.filter((line) => inDatabase.test(line)).map((line) => line.slice(line.indexOf(']') + 2).replaceAll('"', '').split(' '))
    const scriptNames = new Map(admissionScripts.map((script) => [`evalsha ${script.sha}`, script.name]))
    const tally: Record<string, number> = {}
    // The admissions, and the settlements, of one turn of a gateway's event loop go in one script run:
    // after EVALSHA, its SHA, the key count and the keys, admit.lua takes 3 arguments then 12 per
    // request, settle.lua 3 then 8 per request.
    const perRequest: Record<string, number> = { admit: 12, settle: 8 }
    const carried: Record<string, number> = { admit: 0, settle: 0 }
    for (const words of sent) {
      const command = words.slice(0, 2).join(' ').toLowerCase()
      const name = scriptNames.get(command) ?? command
      tally[name] = (tally[name] ?? 0) + 1
      if (name in perRequest) carried[name]! += (words.length - 3 - Number(words[2]) - 3) / perRequest[name]!
    }
    // Not on a request's way: 5 s and 30 s after an organization's counters were rebuilt (its first
    // request, here in each test), the gateway that rebuilt them asks about the usage rows of the
    // requests that started before its ledger read, which may have come late (late-usage.ts).
    const { 'apply-late': followUps = 0, ...onTheWay } = tally
    // A turn that sends runs first queues a PING, in the same write: it makes node-redis write the
    // runs in that turn (turn-batches.ts), and nothing waits for its answer.
    // A request admitted from its gateway's lease (ADMISSION_LEASE_MS) has no admit of its own. Each
    // lease ends once, after the requests (end-leases.lua), off their way.
    const { admit: admitRuns = 0, settle: settleRuns = 0, ping: pings = 0, 'end-leases': leaseEnds = 0, ...others } = onTheWay
    expect(others).toEqual({})
    expect(carried.settle).toBe(requests)
    expect(carried.admit >= 1 && carried.admit <= requests).toBe(true)
    expect([admitRuns >= 1 && admitRuns <= requests, settleRuns >= 1 && settleRuns <= requests]).toEqual([true, true])
    expect(leaseEnds).toBeLessThanOrEqual(carried.admit)
    expect(pings).toBeLessThanOrEqual(admitRuns + settleRuns + leaseEnds)
    expect(followUps).toBeLessThanOrEqual(3)
  }, 60_000)
})
