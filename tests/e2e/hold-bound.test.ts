import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import postgres from 'postgres'
import { RedisAdmissionStore } from '../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis, type RedisClient } from '../../server/adapters/redis/client'
import { billingMonth, defaultBillingTimeZone } from '../../server/core/admission'
import { boundTokensPerMessage, boundTokensPerRequest } from '../../server/core/hold-bound'
import { formatEgp, parseEgp } from '../../server/core/money'
import { catalogFileModel } from '../support/catalog-file-model'
import { createPostgresDatabase, createTempDir } from '../support/databases'
import { jsonResponse, startFakeUpstream, upstreamCompletion, type FakeUpstream } from '../support/fake-upstream'
import { forgetOrganizations } from '../support/forget-organizations'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { testRedisUrl } from '../support/redis-server'
import { demoCatalogPath } from '../support/test-app'
import { waitFor } from '../support/wait-for'

// The repro of issue #26 item 1: an upstream whose tokenizer makes a token of every byte (digits,
// base64 and many scripts come close), against holds that counted 4 characters a token. Every
// limit must hold: the balance, each key's monthly cap and the project's, and the books agree.
const model = 'e2e/byte-counted'
const requests = 500
const keysPerTenant = 10
const credit = '2'
/** The limit a tenant's requests meet first: its balance, or its project's and keys' monthly caps. */
interface Limits {
  binding: string
  keyCap: string
  projectCap: string
}
const cases: Limits[] = [
  { binding: 'the balance', keyCap: '0.5', projectCap: '3' },
  { binding: 'the monthly caps', keyCap: '0.25', projectCap: '1.2' },
]
const digits = '0123456789'.repeat(1_600)
const body = { model, messages: [{ role: 'user', content: digits }], max_tokens: 10 }
// The hold of one request: 16,000 bytes and the framing at 5 EGP per 1M tokens, 10 output tokens at 15.
const holdMicros = BigInt((digits.length + boundTokensPerMessage + boundTokensPerRequest) * 5 + 10 * 15)
/** Requests admitted at once within the balance and the project's cap (each key's cap holds three). */
const admissible = ({ projectCap }: Limits) => Number((parseEgp(projectCap) < parseEgp(credit) ? parseEgp(projectCap) : parseEgp(credit)) / holdMicros)

let upstream: FakeUpstream
let catalogDir: ReturnType<typeof createTempDir>
let catalogPath: string
// The upstream answers no request of a burst until every other one is answered: all admitted
// requests hold at once, as in a burst whose upstream is slower than admission.
let arrived = 0
let arrivedOrAnswered: () => void = () => {}
let released: Promise<void> = Promise.resolve()

beforeAll(async () => {
  upstream = startFakeUpstream(async (request) => {
    if (request.method === 'GET') return jsonResponse({ object: 'list', data: [] })
    let promptBytes = 0
    for (const message of request.body.messages) promptBytes += Buffer.byteLength(String(message.content))
    arrived += 1
    arrivedOrAnswered()
    await released
    return jsonResponse(upstreamCompletion('0123456789', { prompt_tokens: promptBytes, completion_tokens: 10, total_tokens: promptBytes + 10 }))
  })
  catalogDir = createTempDir('hold-bound')
  const demo = (await Bun.file(demoCatalogPath).json()) as { models: unknown[] }
  const byteCounted = catalogFileModel({
    id: model,
    owned_by: 'e2e (fake upstream)',
    context_window: 32_768,
    input_price_egp: '5',
    output_price_egp: '15',
    deployments: [{ provider: 'openai-compatible', base_url: upstream.baseUrl, upstream_model: 'byte-counted' }],
  })
  catalogPath = join(catalogDir.path, 'catalog.json')
  await Bun.write(catalogPath, JSON.stringify({ models: [...demo.models, byteCounted] }))
})

afterAll(() => {
  upstream?.stop()
  catalogDir?.remove()
})

async function manage(gateway: RunningGateway, token: string | null, method: string, path: string, payload?: unknown) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(token === null ? {} : { authorization: `Bearer ${token}` }),
  }
  const response = await fetch(`${gateway.baseUrl}${path}`, {
    method,
    headers,
    body: payload === undefined ? undefined : JSON.stringify(payload),
  })
  const json = (await response.json()) as any
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

/** A tenant with 2 EGP, its project and its keys capped as `limits` say. */
async function setUpTenant(gateway: RunningGateway, { keyCap, projectCap }: Limits) {
  const tenant = await gateway.createDemoTenant({ balanceEgp: credit, rpm: 100_000 })
  const { access_token: token } = await manage(gateway, null, 'POST', '/auth/login', { email: tenant.email, password: tenant.password })
  const projectPath = `/organization/projects/${tenant.project_id}`
  await manage(gateway, token, 'POST', projectPath, { monthly_spend_cap_egp: projectCap })
  const newKey = async (i: number) => (await manage(gateway, token, 'POST', `${projectPath}/api_keys`, { name: `burst ${i}`, rpm_limit: 100_000, monthly_spend_cap_egp: keyCap })).value as string
  const keys = await Promise.all(Array.from({ length: keysPerTenant }, (_, i) => newKey(i)))
  return { orgId: tenant.organization_id as string, projectId: tenant.project_id as string, token: token as string, keys }
}

/** The burst: `requests` at once, spread over the gateways and keys; the tally of their answers. */
async function burst(gateways: RunningGateway[], keys: string[]): Promise<Record<string, number>> {
  const text = JSON.stringify(body)
  let answered = 0
  arrived = 0
  released = new Promise((release) => {
    arrivedOrAnswered = () => {
      if (arrived + answered === requests) release()
    }
  })
  const outcomes = await Promise.all(
    Array.from({ length: requests }, async (_, i) => {
      const gateway = gateways[i % gateways.length]!
      const key = keys[Math.floor(i / gateways.length) % keys.length]!
      const response = await fetch(`${gateway.baseUrl}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: text })
      const answer = (await response.json()) as { error?: { code: string } }
      if (!response.ok) {
        answered += 1
        arrivedOrAnswered()
      }
      return response.ok ? 'served' : `${response.status} ${answer.error?.code}`
    }),
  )
  const tally: Record<string, number> = {}
  for (const outcome of outcomes) tally[outcome] = (tally[outcome] ?? 0) + 1
  return tally
}

describe('a burst of 16,000-digit prompts counted a token a byte upstream', () => {
  describe('over two gateways on Postgres and Redis', () => {
    let database: Awaited<ReturnType<typeof createPostgresDatabase>>
    const gateways: RunningGateway[] = []
    let redis: RedisClient
    let redisUrl: string

    beforeAll(async () => {
      redisUrl = await testRedisUrl(9)
      database = await createPostgresDatabase()
      redis = createRedisClient(redisUrl, { log: () => {} })
      await waitForRedis(redis, 5_000)
      const options = {
        database: 'postgres' as const,
        sharedDatabaseUrl: database.url,
        catalogPath,
        env: { REDIS_URL: redisUrl, USAGE_FLUSH_MS: '20' },
      }
      gateways.push(...(await Promise.all([startGateway(options), startGateway(options)])))
    }, 60_000)

    afterAll(async () => {
      await Promise.all(gateways.map((gateway) => gateway.stop()))
      redis?.destroy()
      if (database) await forgetOrganizations(redisUrl, database.url)
      await database?.drop()
    }, 60_000)

    for (const limits of cases) {
      const { binding, keyCap, projectCap } = limits
      test(`against ${binding}: drives no balance or cap below zero, and credits minus the ledger equal the balance to the micro-EGP`, async () => {
        const { orgId, projectId, keys } = await setUpTenant(gateways[0]!, limits)

        const tally = await burst(gateways, keys)

        const sql = postgres(database.url, { max: 1, onnotice: () => {} })
        try {
          const served = tally.served ?? 0
          let rows: Array<{ key_id: string; spent: string; count: number }> = []
          await waitFor(
            async () => {
              rows = await sql`SELECT key_id, sum(cost_micros)::text AS spent, count(*)::int AS count FROM usage_events WHERE org_id = ${orgId} GROUP BY key_id`
              return rows.reduce((sum, row) => sum + row.count, 0) === served
            },
            { what: `${served} usage rows`, timeoutMs: 20_000 },
          )
          const keySpend = Object.fromEntries(rows.map((row) => [row.key_id, BigInt(row.spent)]))
          const debit = Object.values(keySpend).reduce((sum, spent) => sum + spent, 0n)
          const counters = await new RedisAdmissionStore(redis).snapshot(orgId, billingMonth(Date.now(), defaultBillingTimeZone))
          console.log(`two gateways, ${binding}: ${JSON.stringify(tally)}, balance ${formatEgp(parseEgp(credit) - debit)} EGP`)

          expect(Object.keys(tally).filter((outcome) => outcome !== 'served' && !outcome.startsWith('402 '))).toEqual([])
          expect(parseEgp(credit) - debit >= 0n).toBe(true)
          expect(debit <= parseEgp(projectCap)).toBe(true)
          for (const spent of Object.values(keySpend)) expect(spent <= parseEgp(keyCap)).toBe(true)
          expect({
            balance: counters?.balanceMicros,
            held: counters?.heldMicros,
            keys: Object.fromEntries(counters?.keySpend ?? []),
            projects: Object.fromEntries(counters?.projectSpend ?? []),
          }).toEqual({
            balance: parseEgp(credit) - debit,
            held: 0n,
            keys: keySpend,
            projects: { [projectId]: debit },
          })
          expect(served).toBe(admissible(limits))
        } finally {
          await sql.end()
        }
      }, 60_000)
    }
  })

  describe('on the embedded defaults (PGlite, in-process store)', () => {
    let gateway: RunningGateway

    beforeAll(async () => {
      gateway = await startGateway({
        database: 'pglite',
        catalogPath,
        env: { USAGE_FLUSH_MS: '20' },
      })
    }, 60_000)

    afterAll(async () => {
      await gateway?.stop()
    }, 30_000)

    for (const limits of cases) {
      const { binding, keyCap, projectCap } = limits
      test(`against ${binding}: drives no balance or cap below zero, and credits minus the ledger equal the balance to the micro-EGP`, async () => {
        const { token, keys } = await setUpTenant(gateway, limits)

        const tally = await burst([gateway], keys)

        // Once every usage row is written, the ledger's balance and the live one (nothing held) agree.
        let balance: any
        await waitFor(
          async () => {
            balance = await manage(gateway, token, 'GET', '/organization/balance')
            return balance.balance_egp === balance.available_egp
          },
          { what: 'the ledger to record every settlement', timeoutMs: 20_000 },
        )
        console.log(`embedded, ${binding}: ${JSON.stringify(tally)}, balance ${balance.balance_egp} EGP`)
        const debit = parseEgp(balance.month_to_date_spend_egp)
        const keySpends = balance.api_keys.map((line: { month_to_date_spend_egp: string }) => parseEgp(line.month_to_date_spend_egp))

        expect(Object.keys(tally).filter((outcome) => outcome !== 'served' && !outcome.startsWith('402 '))).toEqual([])
        expect(balance.balance_egp.startsWith('-')).toBe(false)
        expect(parseEgp(balance.balance_egp)).toBe(parseEgp(credit) - debit)
        expect(debit <= parseEgp(projectCap)).toBe(true)
        expect(keySpends.every((spent: bigint) => spent <= parseEgp(keyCap))).toBe(true)
        expect(tally.served).toBe(admissible(limits))
      }, 60_000)
    }
  })
})
