import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import postgres from 'postgres'
import { RedisAdmissionStore } from '../../server/adapters/redis/admission-store'
import { waitForRedis } from '../../server/adapters/redis/client'
import { connectRedis, type RedisConnection } from '../../server/adapters/redis/connect-redis'
import { billingMonth, defaultBillingTimeZone } from '../../server/core/admission'
import { costMicros, parseEgp } from '../../server/core/money'
import { catalogFileModel } from '../support/catalog-file-model'
import { createPostgresDatabase, createTempDir } from '../support/databases'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { clusterNodeTimeoutMs, useRedisCluster } from '../support/redis-cluster'
import { waitFor } from '../support/wait-for'
import { chat, egp, tally, type Answer } from './fault-scenario'

// Two gateways on one Postgres and a Redis Cluster of 3 masters with a replica each, all of this
// file's own: limits, balances and caps hold across both gateways, a revoke reaches the other one
// within a second, and a master that fails over, gracefully or by a crash, loses no money and
// refuses requests (503, never free inference) while it is away.

// The prompt is free and 16 output tokens cost 15 EGP per 1M: a request's hold is exactly its cost,
// so how many requests a limit lets through does not depend on when others settle.
const prices = { input_price_egp: '0', output_price_egp: '15' }
const quickModel = 'cluster/quick'
/** Answers after 100 ms: a few workers per key stay well under the edge guard's 100 requests a second. */
const pacedModel = 'cluster/paced'
/** Answers after 2 s: requests still running while a master is killed. */
const slowModel = 'cluster/slow'
const body = (model: string) => ({ model, messages: [{ role: 'user', content: 'Tell me about the Nile' }], max_tokens: 16 })
const worstCaseMicros = costMicros(0, 16, parseEgp(prices.input_price_egp), parseEgp(prices.output_price_egp))

const cluster = useRedisCluster()
let database: Awaited<ReturnType<typeof createPostgresDatabase>>
let catalogDir: ReturnType<typeof createTempDir>
let gateways: [RunningGateway, RunningGateway]
let redis: RedisConnection
let sql: postgres.Sql

beforeAll(async () => {
  database = await createPostgresDatabase()
  sql = postgres(database.url, { max: 2, onnotice: () => {} })
  catalogDir = createTempDir('redis-cluster')
  const simulatorModel = (id: string, simulator: Record<string, number>) =>
    catalogFileModel({ id, max_output_tokens: 64, ...prices, deployments: [{ provider: 'simulator', simulator }] })
  const catalogPath = join(catalogDir.path, 'catalog.json')
  await Bun.write(catalogPath, JSON.stringify({ models: [simulatorModel(quickModel, {}), simulatorModel(pacedModel, { ttft_ms: 100 }), simulatorModel(slowModel, { ttft_ms: 2_000 })] }))
  // No periodic reconciliation: the books must agree without a repair.
  const options = { database: 'postgres' as const, sharedDatabaseUrl: database.url, catalogPath, env: { REDIS_URL: cluster.current.url, USAGE_FLUSH_MS: '20', RECONCILE_INTERVAL_S: '0' } }
  gateways = (await Promise.all([startGateway(options), startGateway(options)])) as [RunningGateway, RunningGateway]
  redis = connectRedis(cluster.current.url, { log: () => {} })
  await waitForRedis(redis, 10_000)
}, 90_000)

afterAll(async () => {
  await Promise.all((gateways ?? []).map((gateway) => gateway.stop()))
  redis?.destroy()
  await sql?.end({ timeout: 5 })
  await database?.drop()
  catalogDir?.remove()
}, 60_000)

async function call(gateway: RunningGateway, method: string, path: string, token: string | null, payload?: unknown) {
  const response = await fetch(`${gateway.baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    body: payload === undefined ? undefined : JSON.stringify(payload),
  })
  return { status: response.status, json: (await response.json()) as any }
}

/** A demo tenant, signed in, with `keys` more API keys (each with `keyCapEgp`) and the project's cap set. */
async function tenant(setup: { balanceEgp?: string; rpm?: number; keys?: number; keyCapEgp?: string; projectCapEgp?: string } = {}) {
  const made = await gateways[0].createDemoTenant({ balanceEgp: setup.balanceEgp ?? '1000', rpm: setup.rpm ?? 100_000 })
  const session = (await call(gateways[0], 'POST', '/auth/login', null, { email: made.email, password: made.password })).json.access_token as string
  const projectPath = `/organization/projects/${made.project_id}`
  if (setup.projectCapEgp !== undefined) expect((await call(gateways[0], 'POST', projectPath, session, { monthly_spend_cap_egp: setup.projectCapEgp })).status).toBe(200)
  const keys = await Promise.all(
    Array.from({ length: setup.keys ?? 0 }, async (_, i) => {
      const key = await call(gateways[0], 'POST', `${projectPath}/api_keys`, session, { name: `key ${i}`, rpm_limit: 100_000, monthly_spend_cap_egp: setup.keyCapEgp ?? null })
      expect(key.status).toBe(201)
      return { id: key.json.id as string, value: key.json.value as string }
    }),
  )
  return { ...made, session, keys }
}

/** Sends `count` requests at once, alternating between the gateways and over `apiKeys`. */
function burst(count: number, apiKeys: string[], model = quickModel): Promise<Answer[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => chat(gateways[i % 2]!.baseUrl, apiKeys[Math.floor(i / 2) % apiKeys.length]!, body(model))))
}

/**
 * Waits until the organization's counters hold nothing and its ledger has `rows` usage rows, then
 * returns both books: the counters' balance and spends, and what the ledger says they must be.
 */
async function books(orgId: string, rows: number) {
  const store = new RedisAdmissionStore(redis)
  const month = billingMonth(Date.now(), defaultBillingTimeZone)
  let counters: Awaited<ReturnType<typeof store.snapshot>> = null
  let recorded: Array<{ key_id: string; cost_micros: string }> = []
  await waitFor(
    async () => {
      recorded = await sql`select key_id, cost_micros::text from usage_events where org_id = ${orgId}`
      // Refused (null) while this client has not yet found a master that was just replaced.
      counters = await store.snapshot(orgId, month).catch(() => null)
      return recorded.length === rows && counters?.heldMicros === 0n
    },
    { timeoutMs: 30_000, what: `${rows} usage rows and no open hold` },
  )
  const [credit] = await sql<Array<{ total: string }>>`select coalesce(sum(amount_micros), 0)::text as total from credit_transactions where org_id = ${orgId}`
  const keySpend = new Map<string, bigint>()
  for (const row of recorded) keySpend.set(row.key_id, (keySpend.get(row.key_id) ?? 0n) + BigInt(row.cost_micros))
  const debited = [...keySpend.values()].reduce((sum, spend) => sum + spend, 0n)
  return {
    counters: { balanceMicros: counters!.balanceMicros, keySpend: counters!.keySpend },
    ledger: { balanceMicros: BigInt(credit!.total) - debited, keySpend },
  }
}

describe('two gateways on a Redis Cluster', () => {
  const k = 10

  test('a balance covering K requests admits exactly K of 40 sent at once through both gateways, and the books agree', async () => {
    const { organization_id: orgId, api_key, keys } = await tenant({ balanceEgp: egp(BigInt(k) * worstCaseMicros), keys: 3 })

    const answers = await burst(40, [api_key, ...keys.map((key) => key.value)])

    // Refused for the balance: short of a request's hold, or (once settlements spent it) used up.
    const { '200': served, '402 insufficient_balance': short = 0, '402 quota_exceeded': usedUp = 0, ...others } = tally(answers)
    expect({ served, refused: short + usedUp, others }).toEqual({ served: k, refused: 40 - k, others: {} })
    const { counters, ledger } = await books(orgId, k)
    expect(counters).toEqual(ledger)
    expect(counters.balanceMicros).toBe(0n)
  }, 60_000)

  test("a key's and a project's monthly caps admit exactly K each through both gateways", async () => {
    const keyCapped = await tenant({ keys: 1, keyCapEgp: egp(BigInt(k) * worstCaseMicros) })
    const projectCapped = await tenant({ keys: 3, projectCapEgp: egp(BigInt(k) * worstCaseMicros) })

    const [byKey, byProject] = await Promise.all([burst(40, [keyCapped.keys[0]!.value]), burst(40, projectCapped.keys.map((key) => key.value))])

    expect([tally(byKey), tally(byProject)]).toEqual([
      { '200': k, '402 spending_cap_reached': 40 - k },
      { '200': k, '402 project_spend_cap_exceeded': 40 - k },
    ])
    for (const { organization_id } of [keyCapped, projectCapped]) {
      const { counters, ledger } = await books(organization_id, k)
      expect(counters).toEqual(ledger)
    }
  }, 60_000)

  test("a key's requests-per-minute limit of 10 admits 10 of 30 sent at once through both gateways", async () => {
    const { api_key } = await tenant({ rpm: 10 })

    const answers = await burst(30, [api_key])

    expect(tally(answers)).toEqual({ '200': 10, '429 rate_limit_exceeded': 20 })
  }, 60_000)

  test('a key revoked through one gateway is refused by the other, which had it cached, within a second', async () => {
    const made = await tenant({ keys: 1 })
    const [key] = made.keys
    const ask = () => chat(gateways[1].baseUrl, key!.value, body(quickModel))
    expect((await ask()).status).toBe(200)

    expect((await call(gateways[0], 'DELETE', `/organization/projects/${made.project_id}/api_keys/${key!.id}`, made.session)).status).toBe(200)
    const revokedAt = performance.now()
    let last = await ask()
    while (last.status === 200 && performance.now() - revokedAt < 5_000) {
      await Bun.sleep(10)
      last = await ask()
    }
    const refusedAfterMs = performance.now() - revokedAt

    console.log(`the other gateway refused the revoked key ${refusedAfterMs.toFixed(0)} ms after the revoke answered`)
    expect([last.status, last.code]).toEqual([401, 'key_revoked'])
    expect(refusedAfterMs).toBeLessThan(1_000)
  }, 60_000)
})

/**
 * Sends requests of `model` from `workers` loops, alternating gateways, until `stop()`; each loop
 * on a key of its own sends at most one request per 25 ms, which keeps a key under the edge guard's
 * 100 requests a second however fast refusals come back. `answers` are in the order they came.
 */
function keepAsking(apiKeys: string[], workers: number, model = pacedModel) {
  const answers: Answer[] = []
  let stopped = false
  const loops = Array.from({ length: workers }, async (_, worker) => {
    for (let i = 0; !stopped; i++) {
      const paced = Bun.sleep(25)
      answers.push(await chat(gateways[(worker + i) % 2]!.baseUrl, apiKeys[worker % apiKeys.length]!, body(model)))
      await paced
    }
  })
  return {
    answers,
    async stop() {
      stopped = true
      await Promise.all(loops)
      return answers
    },
  }
}

describe('a master of the Redis Cluster failing over', () => {
  test('CLUSTER FAILOVER under load: every answer is 200 or 503 service_unavailable, serving goes on, and the books agree to the micro-EGP', async () => {
    const { organization_id: orgId, api_key, keys } = await tenant({ keys: 3 })
    const master = await cluster.current.masterOf(`{o:${orgId}}`)
    const load = keepAsking([api_key, ...keys.map((key) => key.value)], 8)
    await waitFor(() => load.answers.filter((answer) => answer.status === 200).length >= 20, { what: 'requests served before the failover' })

    await cluster.current.failover(master)
    const failedOverAt = performance.now()
    await waitFor(() => load.answers.some((answer) => answer.status === 200 && answer.sentAtMs > failedOverAt), { timeoutMs: 10_000, what: 'a request served after the failover' })
    const answers = await load.stop()

    const { '200': served = 0, '503 service_unavailable': refused = 0, ...others } = tally(answers)
    expect(others).toEqual({})
    console.log(`CLUSTER FAILOVER under load: ${served} served, ${refused} refused with 503`)
    const { counters, ledger } = await books(orgId, served)
    expect(counters).toEqual(ledger)
  }, 60_000)

  test('a master killed with requests in flight: its organizations get 503 service_unavailable until the replica takes over, those in flight finish and are billed once, and the books agree', async () => {
    const { organization_id: orgId, api_key, keys } = await tenant({ keys: 3 })
    const apiKeys = [api_key, ...keys.map((key) => key.value)]
    const master = await cluster.current.masterOf(`{o:${orgId}}`)
    const store = new RedisAdmissionStore(redis)
    // Six requests admitted, and answering only after the kill; one served first loads the counters.
    expect((await chat(gateways[0].baseUrl, api_key, body(quickModel))).status).toBe(200)
    const inFlight = Promise.all(Array.from({ length: 6 }, (_, i) => chat(gateways[i % 2]!.baseUrl, apiKeys[i % apiKeys.length]!, body(slowModel))))
    await waitFor(async () => (await store.snapshot(orgId, billingMonth(Date.now(), defaultBillingTimeZone)))?.heldMicros === 6n * worstCaseMicros, { what: 'six holds' })

    const { takenOver } = await cluster.current.killMaster(master)
    const killedAt = performance.now()
    const load = keepAsking(apiKeys, 4, quickModel)
    await takenOver
    const promotedAt = performance.now()
    await waitFor(() => load.answers.some((answer) => answer.status === 200 && answer.sentAtMs > promotedAt), { timeoutMs: 10_000, what: 'a request served by the promoted replica' })
    const answers = await load.stop()
    const slow = await inFlight

    // Sent while the master was dead and before its replica could take over: refused, never served unbilled.
    const whileDown = answers.filter((answer) => answer.sentAtMs < killedAt + clusterNodeTimeoutMs)
    expect(whileDown.length).toBeGreaterThan(0)
    expect(tally(whileDown)).toEqual({ '503 service_unavailable': whileDown.length })
    const { '200': served = 0, '503 service_unavailable': refused = 0, ...others } = tally(answers)
    expect(others).toEqual({})
    expect(tally(slow)).toEqual({ '200': 6 })
    console.log(`master killed: ${refused} refused with 503 over ${(promotedAt - killedAt).toFixed(0)} ms until its replica served, then ${served} served`)
    const { counters, ledger } = await books(orgId, 1 + served + slow.length)
    expect(counters).toEqual(ledger)
  }, 60_000)
})
