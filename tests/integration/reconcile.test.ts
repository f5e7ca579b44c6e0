import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InProcessAdmissionStore } from '../../server/adapters/in-process/admission-store'
import { RedisAdmissionStore } from '../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis } from '../../server/adapters/redis/client'
import { admitLoaded, billingMonth, type AdmissionStore } from '../../server/core/admission'
import { reconcileAccounts, type BillingAccount, type Reconciliation, type ReconcileOptions } from '../../server/core/reconcile'
import { Settlements } from '../../server/core/settlements'
import { UsageRecorder } from '../../server/core/usage-recorder'
import { openRedisStores } from '../support/admission-redis'
import { createPostgresDatabase, describeEachDatabase } from '../support/databases'
import { forgetOrganizations } from '../support/forget-organizations'
import postgres from 'postgres'
import { childEnv, runBun, spawnBun } from '../support/processes'
import { readUntil } from '../support/read-until'
import { testRedisUrl } from '../support/redis-server'
import { usageEvent } from '../support/usage-events'

/** The admission stores the reconciler works on: the embedded one, and Redis seen by two gateways. */
const storeKinds: Record<string, () => Promise<{ stores: [AdmissionStore, AdmissionStore]; close(): Promise<void> }>> = {
  'in-process store': async () => {
    const store = new InProcessAdmissionStore()
    return { stores: [store, store], close: async () => {} }
  },
  'Redis store': async () => {
    const opened = await openRedisStores(2)
    return { stores: [opened.stores[0]!, opened.stores[1]!], close: () => opened.close() }
  },
}

// No waiting where nothing is on its way to the ledger.
const quick: ReconcileOptions = { rowWaitMs: 0, confirmAfterMs: 0 }

describeEachDatabase('reconcileAccounts', (context) => {
  for (const [storeKind, openStore] of Object.entries(storeKinds)) {
    describe(storeKind, () => {
      let opened: Awaited<ReturnType<typeof openStore>>
      const store = () => opened.stores[0]
      beforeAll(async () => {
        opened = await openStore()
      })
      afterAll(async () => {
        await opened?.close()
      })

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

        const [first] = await reconcileAccounts(store(), context.current.db.ledger, [account], quick)
        const [second] = await reconcileAccounts(store(), context.current.db.ledger, [account], quick)

        expect([first!.outcome, second!.outcome]).toEqual(['rebuilt', 'in_step'])
        const snapshot = await store().snapshot(account.orgId, month)
        expect({ balance: snapshot!.balanceMicros, keys: snapshot!.keySpend, projects: snapshot!.projectSpend }).toEqual({
          balance: 999_500n,
          keys: new Map([['key_a', 300n], ['key_b', 200n]]),
          projects: new Map([['proj_a', 500n]]),
        })
      })

      test('reports drift from the ledger and repairs it; a dry run only reports', async () => {
        const { account, month } = await tenantWithUsage()
        await store().load(account.orgId, { month, balanceMicros: 999_900n, keySpend: new Map([['key_a', 100n]]), projectSpend: new Map([['proj_a', 100n]]) })

        const [dryRun] = await reconcileAccounts(store(), context.current.db.ledger, [account], { ...quick, repair: false })
        const unchanged = await store().snapshot(account.orgId, month)
        const [repaired] = await reconcileAccounts(store(), context.current.db.ledger, [account], quick)
        const after = await store().snapshot(account.orgId, month)

        expect(dryRun!.outcome).toBe('drifted')
        expect(dryRun!.drift).toEqual({ balanceMicros: 400n, keys: new Map([['key_a', -200n], ['key_b', -200n]]), projects: new Map([['proj_a', -400n]]) })
        expect(unchanged!.balanceMicros).toBe(999_900n)
        expect(repaired!.outcome).toBe('repaired')
        expect({ balance: after!.balanceMicros, keys: after!.keySpend, projects: after!.projectSpend }).toEqual({
          balance: 999_500n,
          keys: new Map([['key_a', 300n], ['key_b', 200n]]),
          projects: new Map([['proj_a', 500n]]),
        })
      })

      test('finds the counters in step while requests settle and their rows follow in batches, and repairs a real drift under that traffic exactly once, with two reconcilers at it', async () => {
        const { db } = context.current
        const tenant = await db.createDemoTenant({ balanceMicros: 100_000_000n })
        const account: BillingAccount = { orgId: tenant.organizationId, timeZone: 'Africa/Cairo' }
        const month = billingMonth(Date.now(), account.timeZone)
        // A gateway's own path: settle, then queue the usage row; rows go out every 200 ms.
        const recorder = new UsageRecorder(db.usage, { flushMs: 200, log: () => {} })
        const settlements = new Settlements(store())
        const readLedger = (orgId: string, readMonth: string, requestIds: readonly string[]) => db.ledger.readCounters(orgId, readMonth, account.timeZone, requestIds)
        let served = 0
        let running = true
        const gateway = async (worker: number) => {
          for (let i = 0; running; i++) {
            const requestId = `req_${worker}_${i}_${account.orgId}`
            const keyId = `key_${i % 3}`
            const nowMs = Date.now()
            const admitted = await admitLoaded(store(), { requestId, orgId: account.orgId, keyId, projectId: 'proj_a', rpmLimit: 1_000_000, worstCaseMicros: 1_000n, keyCapMicros: null, projectCapMicros: null, nowMs, reservationTtlMs: 60_000, timeZone: account.timeZone }, readLedger)
            if (!admitted.admitted) throw new Error(`refused: ${JSON.stringify(admitted)}`)
            const costMicros = BigInt(1 + ((i * 7919 + worker) % 997))
            await new Promise<void>((settled) =>
              settlements.settle({ requestId, orgId: account.orgId, keyId, projectId: 'proj_a', month: admitted.month, costMicros, nowMs: Date.now() }, () => {
                recorder.record(usageEvent({ requestId, orgId: account.orgId, keyId, projectId: 'proj_a', costMicros, createdAt: new Date(nowMs) }))
                settled()
              }),
            )
            served++
            await Bun.sleep(2)
          }
        }
        const traffic = Promise.all(Array.from({ length: 8 }, (_, worker) => gateway(worker)))
        // Up to 5 s for rows on their way: a loaded machine may write a batch late.
        const options: ReconcileOptions = { rowWaitMs: 250, rowLooks: 20, confirmAfterMs: 300 }
        try {
          while (served < 200) await Bun.sleep(10)
          const [inStep] = await reconcileAccounts(store(), db.ledger, [account], options)

          // A settlement whose usage row was lost, and a usage row whose settlement never reached the store.
          await store().settle({ requestId: `req_row_lost_${account.orgId}`, orgId: account.orgId, keyId: 'key_lost', projectId: 'proj_b', month, costMicros: 777n, nowMs: Date.now() })
          await db.usage.insertUsageEvents([usageEvent({ requestId: `req_unsettled_${account.orgId}`, orgId: account.orgId, keyId: 'key_row', projectId: 'proj_b', costMicros: 555n, createdAt: new Date() })])
          // Two gateways' reconcilers at once: one repairs; the other's look is left unsettled (the
          // first snapshot ends the watch both joined) or finds the counters changed. A row of the
          // traffic written later than the wait before a read makes the two looks of a pass differ,
          // and the pass leaves the drift to the next (a loaded machine writes batches late): passes
          // go on until one repairs, and none may repair twice.
          const servedBefore = served
          const passes: string[][] = []
          let repaired: Reconciliation | undefined
          for (let pass = 0; pass < 5 && !repaired; pass++) {
            const both = (await Promise.all(opened.stores.map((on) => reconcileAccounts(on, db.ledger, [account], options)))).map(([result]) => result!)
            passes.push(both.map((result) => result.outcome))
            const repairs = both.filter((result) => result.outcome === 'repaired')
            if (repairs.length > 1) throw new Error(`repaired twice in one pass: ${JSON.stringify(passes)}`)
            repaired = repairs[0]
          }
          const servedDuring = served - servedBefore

          running = false
          await traffic
          await recorder.close()
          const [after] = await reconcileAccounts(store(), db.ledger, [account], { ...options, repair: false })
          const ledger = await db.ledger.readCounters(account.orgId, month, account.timeZone)
          const counters = await store().snapshot(account.orgId, month)

          expect(inStep!.outcome).toBe('in_step')
          expect(servedDuring).toBeGreaterThan(0)
          expect({ passes, repaired: repaired !== undefined }).toMatchObject({ repaired: true })
          expect(repaired!.drift).toEqual({ balanceMicros: -222n, keys: new Map([['key_lost', 777n], ['key_row', -555n]]), projects: new Map([['proj_b', 222n]]) })
          expect(after!.outcome).toBe('in_step')
          expect({ balance: counters!.balanceMicros, keys: counters!.keySpend, projects: counters!.projectSpend }).toEqual({
            balance: ledger.balanceMicros,
            keys: new Map([...ledger.keySpend].filter(([, spend]) => spend !== 0n)),
            projects: new Map([...ledger.projectSpend].filter(([, spend]) => spend !== 0n)),
          })
          // The traffic was billed: costs of 1 to 997 uEGP, about 499 a request.
          expect(ledger.balanceMicros).toBeLessThan(100_000_000n - 250n * BigInt(served))
        } finally {
          running = false
          await traffic
          await recorder.close()
        }
      }, 60_000)
    })
  }
})

describe('bun server/cli.ts reconcile', () => {
  // The command reconciles every organization of its database: the scratch database holds only this block's.
  let redisUrl: string
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>

  const cli = (args: string[], env: Record<string, string>) => runBun(['server/cli.ts', ...args], childEnv(env))

  beforeAll(async () => {
    redisUrl = await testRedisUrl(10)
    database = await createPostgresDatabase()
  }, 60_000)

  afterAll(async () => {
    if (database) await forgetOrganizations(redisUrl, database.url)
    await database?.drop()
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

  test('reports a drift on a dry run, and repairs it when a second look finds it the same', async () => {
    const env = { DATABASE_URL: database.url, REDIS_URL: redisUrl }
    const demo = await cli(['demo', '--json', '--balance-egp', '2.5'], env)
    const { organization_id: orgId } = JSON.parse(demo.stdout)
    const month = billingMonth(Date.now(), 'Africa/Cairo')
    const client = createRedisClient(redisUrl)
    await waitForRedis(client, 5_000)
    try {
      const store = new RedisAdmissionStore(client)
      await store.load(orgId, { month, balanceMicros: 2_400_000n, keySpend: new Map(), projectSpend: new Map() })

      const dryRun = await cli(['reconcile', '--dry-run'], env)
      const repair = await cli(['reconcile', '--json'], env)

      expect(dryRun.stdout).toContain(`${orgId} ${month}: drifted; balance off by -0.100000 EGP`)
      expect(dryRun.stdout).toContain('1 drifted (would be repaired)')
      expect(repair.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)).find((line) => line.organization_id === orgId)).toMatchObject({ outcome: 'repaired', balance_drift_micros: '-100000' })
      expect((await store.snapshot(orgId, month))!.balanceMicros).toBe(2_500_000n)
    } finally {
      client.destroy()
    }
  }, 60_000)

  test('refuses without REDIS_URL, saying why', async () => {
    const { stderr, code } = await cli(['reconcile'], { DATABASE_URL: database.url })

    expect(code).not.toBe(0)
    expect(stderr).toContain('set REDIS_URL')
  }, 30_000)
})
