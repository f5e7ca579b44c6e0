import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createClient } from 'redis'
import { InProcessAdmissionStore } from '../../server/adapters/in-process/admission-store'
import { billingMonth } from '../../server/core/admission'
import { reconcileOrganization } from '../../server/core/reconcile'
import { createPostgresDatabase, describeEachDatabase } from '../support/databases'
import postgres from 'postgres'
import { childEnv, runBun, spawnBun } from '../support/processes'
import { usageEvent } from '../support/usage-events'

describeEachDatabase('reconcileOrganization', (context) => {
  async function tenantWithUsage() {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ balanceMicros: 1_000_000n })
    const org = tenant.organizationId
    await db.usage.insertUsageEvents([
      usageEvent({ orgId: org, requestId: `req_1_${org}`, keyId: 'key_a', projectId: 'proj_a', costMicros: 300n, createdAt: new Date() }),
      usageEvent({ orgId: org, requestId: `req_2_${org}`, keyId: 'key_b', projectId: 'proj_a', costMicros: 200n, createdAt: new Date() }),
    ])
    return { account: { orgId: org, timeZone: 'Africa/Cairo' }, month: billingMonth(Date.now()) }
  }

  test('rebuilds counters the store lost, then finds them in step', async () => {
    const { account, month } = await tenantWithUsage()
    const store = new InProcessAdmissionStore()

    const first = await reconcileOrganization(store, context.current.db.ledger, account, Date.now())
    const second = await reconcileOrganization(store, context.current.db.ledger, account, Date.now())

    expect([first.outcome, second.outcome]).toEqual(['rebuilt', 'in_step'])
    const snapshot = await store.snapshot(account.orgId, month)
    expect({ balance: snapshot!.balanceMicros, keys: snapshot!.keySpend, projects: snapshot!.projectSpend }).toEqual({
      balance: 999_500n,
      keys: new Map([['key_a', 300n], ['key_b', 200n]]),
      projects: new Map([['proj_a', 500n]]),
    })
  })

  test('reports drift from the ledger and repairs it; a dry run only reports', async () => {
    const { account, month } = await tenantWithUsage()
    const store = new InProcessAdmissionStore()
    await store.load(account.orgId, { month, balanceMicros: 999_900n, keySpend: new Map([['key_a', 100n]]), projectSpend: new Map([['proj_a', 100n]]) })

    const dryRun = await reconcileOrganization(store, context.current.db.ledger, account, Date.now(), { repair: false })
    const unchanged = await store.snapshot(account.orgId, month)
    const repaired = await reconcileOrganization(store, context.current.db.ledger, account, Date.now())
    const after = await store.snapshot(account.orgId, month)

    expect(dryRun.drift).toEqual({ balanceMicros: 400n, keys: new Map([['key_a', -200n], ['key_b', -200n]]), projects: new Map([['proj_a', -400n]]) })
    expect(unchanged!.balanceMicros).toBe(999_900n)
    expect(repaired.outcome).toBe('repaired')
    expect(after!.balanceMicros).toBe(999_500n)
  })
})

/** What a stream printed up to and including `pattern`. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, pattern: string): Promise<string> {
  const decoder = new TextDecoder()
  let text = ''
  while (!text.includes(pattern)) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`the stream ended before '${pattern}': ${text}`)
    text += decoder.decode(value, { stream: true })
  }
  return text
}

describe('bun server/cli.ts reconcile', () => {
  const redisUrl = 'redis://127.0.0.1:6379/12'
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>

  async function flushRedis(): Promise<void> {
    const client = await createClient({ url: redisUrl }).connect()
    await client.flushDb()
    await client.close()
  }

  const cli = (args: string[], env: Record<string, string>) => runBun(['server/cli.ts', ...args], childEnv(env))

  beforeAll(async () => {
    await flushRedis()
    database = await createPostgresDatabase()
  }, 60_000)

  afterAll(async () => {
    await database?.drop()
    await flushRedis()
  }, 60_000)

  test('rebuilds the Redis counters of every organization from the ledger, a usage row that lands after its read included, then finds them in step', async () => {
    const env = { DATABASE_URL: database.url, REDIS_URL: redisUrl }
    const demo = await cli(['demo', '--json', '--balance-egp', '2.5'], env)
    const { organization_id: orgId } = JSON.parse(demo.stdout)

    const first = spawnBun(['server/cli.ts', 'reconcile', '--json'], childEnv(env))
    const firstErr = first.stderr.getReader()
    // While it waits to look for late rows, a gateway's queued usage row of a request settled
    // before Redis lost the counters (so dated before the command read the ledger) reaches it.
    expect(await readUntil(firstErr, 'looking for usage rows')).toContain('1 organizations rebuilt')
    const writer = postgres(database.url, { max: 1, onnotice: () => {} })
    await writer`INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at)
      VALUES (${`req_late_${orgId}`}, ${orgId}, 'proj_a', 'key_a', 'm', 'chat.completions', false, 1, 1, 1234, 200, 1, NULL, now() - interval '20 seconds')`
    await writer.end()
    const [firstOut, firstCode] = await Promise.all([new Response(first.stdout).text(), first.exited])
    firstErr.releaseLock()
    const second = await cli(['reconcile', '--json'], env)

    expect(firstCode).toBe(0)
    expect(JSON.parse(firstOut)).toMatchObject({ organization_id: orgId, outcome: 'rebuilt' })
    expect(JSON.parse(second.stdout)).toMatchObject({ organization_id: orgId, outcome: 'in_step', balance_drift_micros: '0' })
  }, 60_000)

  test('refuses without REDIS_URL, saying why', async () => {
    const { stderr, code } = await cli(['reconcile'], { DATABASE_URL: database.url })

    expect(code).not.toBe(0)
    expect(stderr).toContain('set REDIS_URL')
  }, 30_000)
})
