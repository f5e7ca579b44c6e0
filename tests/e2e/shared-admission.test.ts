import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import OpenAI from 'openai'
import postgres from 'postgres'
import { createClient } from 'redis'
import { admissionScripts } from '../../server/adapters/redis/admission-scripts'
import { createPostgresDatabase } from '../support/databases'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { flushRedisDatabase } from '../support/admission-redis'
import { waitFor } from '../support/wait-for'

// Two gateways share one Postgres and one Redis (a database index of its own, emptied before and
// after): admission must hold across them (DESIGN.md I1), at two Redis commands per request.
const redisUrl = 'redis://127.0.0.1:6379/11'
const model = 'nile/qwen2.5-7b-instruct'
// Worst case of one request below: 10 estimated prompt tokens at 5 EGP/1M plus 1,000 output tokens
// at 15 EGP/1M = 15,050 micro-EGP.
const worstCaseMicros = 15_050
const k = 23

let database: Awaited<ReturnType<typeof createPostgresDatabase>>
let gateways: RunningGateway[] = []
let workDir: string

const flushRedis = () => flushRedisDatabase(redisUrl)

beforeAll(async () => {
  await flushRedis()
  database = await createPostgresDatabase()
  workDir = mkdtempSync(join(tmpdir(), 'nilegate-shared-'))
  // The demo catalog with a slow first token, so every request is admitted or refused before any settles.
  const catalog = await Bun.file(new URL('../../server/demo-catalog.json', import.meta.url)).json()
  for (const entry of catalog.models) for (const deployment of entry.deployments) deployment.simulator = { ttft_ms: 1_500, inter_token_ms: 0 }
  const catalogPath = join(workDir, 'catalog.json')
  writeFileSync(catalogPath, JSON.stringify(catalog))
  const options = { database: 'postgres' as const, sharedDatabaseUrl: database.url, catalogPath, env: { REDIS_URL: redisUrl, USAGE_FLUSH_MS: '20' } }
  gateways.push(await startGateway(options))
  gateways.push(await startGateway(options))
}, 90_000)

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()))
  gateways = []
  await database?.drop()
  await flushRedis()
  rmSync(workDir, { recursive: true, force: true })
}, 60_000)

describe('two gateways on one Redis and one Postgres', () => {
  test('200 requests at once over both against a balance covering exactly K worst cases: exactly K run, and the ledger never exceeds the credit', async () => {
    const apiKey = await gateways[0]!.createApiKey({ balanceEgp: ((k * worstCaseMicros) / 1_000_000).toFixed(6), rpm: 100_000 })
    const clients = gateways.map((gateway) => new OpenAI({ baseURL: gateway.baseUrl, apiKey, maxRetries: 0 }))

    const outcomes = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        clients[i % 2]!.chat.completions
          .create({ model, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 1_000 })
          .then(() => 'admitted')
          .catch((error: { status?: number; code?: string }) => `${error.status} ${error.code}`),
      ),
    )

    expect(outcomes.filter((outcome) => outcome === 'admitted')).toHaveLength(k)
    expect(new Set(outcomes.filter((outcome) => outcome !== 'admitted'))).toEqual(new Set(['402 insufficient_balance']))
    const sql = postgres(database.url, { max: 1, onnotice: () => {} })
    try {
      let rows: Array<{ count: number; spent: string; credit: string }> = []
      for (let attempt = 0; attempt < 200; attempt++) {
        rows = await sql`SELECT count(*)::int AS count, COALESCE(sum(cost_micros), 0)::text AS spent,
          (SELECT COALESCE(sum(amount_micros), 0) FROM credit_transactions WHERE org_id = u.org_id)::text AS credit
          FROM usage_events u WHERE model = ${model} GROUP BY org_id`
        if (rows[0]?.count === k) break
        await Bun.sleep(25)
      }
      expect(rows).toHaveLength(1)
      expect(rows[0]!.count).toBe(k)
      expect(BigInt(rows[0]!.spent) <= BigInt(rows[0]!.credit)).toBe(true)
    } finally {
      await sql.end()
    }
  }, 60_000)

  test('a request costs at most two Redis round trips on its way: an admit script, then a settle script, each of which it may share', async () => {
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
    const sent = commands.filter((line) => /\[11 [\d[]/.test(line)).map((line) => line.slice(line.indexOf(']') + 2).replaceAll('"', '').split(' '))
    const scriptNames = new Map(admissionScripts.map((script) => [`evalsha ${script.sha}`, script.name]))
    const tally: Record<string, number> = {}
    // The admissions, and the settlements, of one turn of a gateway's event loop go in one script run:
    // after EVALSHA, its SHA, the key count and the keys, admit.lua takes 3 arguments then 10 per
    // request, settle.lua 3 then 6 per request.
    const perRequest: Record<string, number> = { admit: 10, settle: 6 }
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
    const { admit: admitRuns = 0, settle: settleRuns = 0, ping: pings = 0, ...others } = onTheWay
    expect(others).toEqual({})
    expect(carried).toEqual({ admit: requests, settle: requests })
    expect([admitRuns >= 1 && admitRuns <= requests, settleRuns >= 1 && settleRuns <= requests]).toEqual([true, true])
    expect(pings).toBeLessThanOrEqual(admitRuns + settleRuns)
    expect(followUps).toBeLessThanOrEqual(3)
  }, 60_000)
})
