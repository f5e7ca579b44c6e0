import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createClient } from 'redis'
import { billingMonth } from '../../server/core/admission'
import { createPostgresDatabase } from '../support/databases'
import { forgetOrganizations } from '../support/forget-organizations'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { testRedisUrl } from '../support/redis-server'
import { chatModel } from '../support/test-app'
import { waitFor } from '../support/wait-for'

// Two gateways on one Postgres and one Redis reconcile every second (taking turns). Counters
// changed by hand in Redis drift from the ledger while a client keeps spending; a pass repairs
// them, once, and the balance in Redis is then credits minus the ledger to the micro-EGP.
let redisUrl: string
let database: Awaited<ReturnType<typeof createPostgresDatabase>>
let gateways: RunningGateway[] = []

beforeAll(async () => {
  redisUrl = await testRedisUrl(12)
  database = await createPostgresDatabase()
  const options = { database: 'postgres' as const, sharedDatabaseUrl: database.url, env: { REDIS_URL: redisUrl, RECONCILE_INTERVAL_S: '1', USAGE_FLUSH_MS: '50' } }
  gateways = await Promise.all([startGateway(options), startGateway(options)])
}, 90_000)

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()))
  if (database) await forgetOrganizations(redisUrl, database.url)
  await database?.drop()
}, 60_000)

test('the gateways repair counters that drifted from the ledger while requests keep settling, once', async () => {
  const tenant = await gateways[0]!.createDemoTenant()
  const chat = (gateway: RunningGateway) =>
    fetch(`${gateway.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: chatModel, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 }),
    }).then((response) => response.status)
  expect(await chat(gateways[0]!)).toBe(200)
  const redis = await createClient({ url: redisUrl }).connect()
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  let running = true
  const traffic = (async () => {
    for (let i = 0; running; i++) {
      expect(await chat(gateways[i % 2]!)).toBe(200)
      await Bun.sleep(100)
    }
  })()
  try {
    const account = `{o:${tenant.organization_id}}:acct`
    await redis.hIncrBy(account, 'bal', 12_345)
    const repairedLine = /reconcile: (\S+) (\d{6}): counters drifted from the ledger by balance=12345 micro-EGP; repaired/

    const [line] = await Promise.race(gateways.map((gateway) => gateway.waitForOutput(repairedLine, 30_000)))
    running = false
    await traffic
    // Every usage row written, the last settlements' included.
    await waitFor(
      async () => {
        const [{ credits, debits }] = await sql`
          SELECT (SELECT COALESCE(SUM(amount_micros), 0) FROM credit_transactions WHERE org_id = ${tenant.organization_id})::text AS credits,
                 (SELECT COALESCE(SUM(cost_micros), 0) FROM usage_events WHERE org_id = ${tenant.organization_id})::text AS debits`
        return BigInt(credits) - BigInt(debits) === BigInt((await redis.hGet(account, 'bal'))!)
      },
      { timeoutMs: 10_000, what: 'the balance in Redis equal to credits minus the ledger' },
    )

    expect(line).toContain(tenant.organization_id)
    expect(line).toContain(billingMonth(Date.now(), 'Africa/Cairo'))
    expect(gateways.map((gateway) => gateway.output().match(new RegExp(repairedLine, 'g'))?.length ?? 0).reduce((a, b) => a + b)).toBe(1)
  } finally {
    running = false
    await traffic
    await redis.close()
    await sql.end({ timeout: 5 })
  }
}, 60_000)
