/**
 * Measures admit + settle pairs per second against a real Redis (node-redis, EVALSHA: TEST_REDIS_URL,
 * or a redis-server of its own) and the in-process store, then Redis's time inside the scripts per
 * admission and per settlement when a run carries 1, 20 or 100 of them (from INFO commandstats, so
 * the Redis should serve nothing else meanwhile). Not a test: run it by hand on a quiet machine.
 *
 *   bun tests/integration/admission/measure-throughput.ts [seconds per run = 5]
 */
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { RedisAdmissionStore } from '../../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis } from '../../../server/adapters/redis/client'
import type { AdmissionStore, Admitted } from '../../../server/core/admission'
import { randomBase62 } from '../../../server/core/api-keys'
import { admitRequest, orgCounters, settlementOf } from '../../support/admission-requests'
import { testRedisUrl } from '../../support/redis-server'

const seconds = Number(Bun.argv[2] ?? 5)
const orgs = Array.from({ length: 100 }, (_, i) => `org_measure_${i}`)
const keysPerOrg = 10

async function loadOrgs(store: AdmissionStore, nowMs: number): Promise<void> {
  const month = new Intl.DateTimeFormat('en-CA', { timeZone: 'Africa/Cairo', year: 'numeric', month: '2-digit' }).format(nowMs).replace('-', '')
  for (const orgId of orgs) await store.load(orgId, orgCounters(1_000_000_000_000n, { month }))
}

/** `concurrency` loops, each admitting then settling one request at a time, for `seconds`. */
async function run(label: string, stores: AdmissionStore[], concurrency: number): Promise<void> {
  await loadOrgs(stores[0]!, Date.now())
  let pairs = 0
  const latencies: number[] = []
  const deadline = performance.now() + seconds * 1_000
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      const store = stores[worker % stores.length]!
      while (performance.now() < deadline) {
        const orgId = orgs[Math.floor(Math.random() * orgs.length)]!
        const request = admitRequest({ orgId, keyId: `key_${Math.floor(Math.random() * keysPerOrg)}`, rpmLimit: 1_000_000, worstCaseMicros: 5_000n, keyCapMicros: 1_000_000_000_000n, projectCapMicros: 1_000_000_000_000n, nowMs: Date.now() })
        const startedAt = performance.now()
        const admitted = await store.admit(request)
        latencies.push(performance.now() - startedAt)
        if (!admitted.admitted) throw new Error(`refused: ${JSON.stringify(admitted)}`)
        await store.settle(settlementOf(request, admitted, { costMicros: 3_000n, nowMs: Date.now() }))
        pairs++
      }
    }),
  )
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.floor(q * (latencies.length - 1))]!.toFixed(2)
  console.log(`${label.padEnd(44)} ${Math.round(pairs / seconds).toLocaleString('en').padStart(8)} admit+settle/s  (${Math.round((2 * pairs) / seconds).toLocaleString('en')} scripts/s)  admit p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`)
}

/**
 * Redis's time inside EVALSHA per admission and per settlement when `batch` of each go in one run
 * (one turn of the event loop): one organization, 1,000 keys, 300 runs after 50 to warm up.
 */
async function scriptTime(store: RedisAdmissionStore, client: ReturnType<typeof createRedisClient>, batch: number): Promise<void> {
  const orgId = `org_measure_runs_${batch}`
  const month = new Intl.DateTimeFormat('en-CA', { timeZone: 'Africa/Cairo', year: 'numeric', month: '2-digit' }).format(Date.now()).replace('-', '')
  await store.load(orgId, orgCounters(1_000_000_000_000n, { month }))
  const evalshaUs = async () => Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(String(await client.sendCommand(['INFO', 'commandstats'])))?.[1] ?? 0)
  let [admitUs, settleUs, measured] = [0, 0, 0]
  for (let run = 0; run < 350; run++) {
    const requests = Array.from({ length: batch }, () => admitRequest({ orgId, keyId: `key_${Math.floor(Math.random() * 1_000)}`, rpmLimit: 1_000_000, worstCaseMicros: 5_000n, nowMs: Date.now(), timeZone: 'Africa/Cairo' }))
    const start = await evalshaUs()
    const admitted = await Promise.all(requests.map((request) => store.admit(request)))
    const admittedAt = await evalshaUs()
    await Promise.all(requests.map((request, i) => store.settle(settlementOf(request, admitted[i] as Admitted, { costMicros: 3_000n, nowMs: Date.now() }))))
    const settledAt = await evalshaUs()
    if (run < 50) continue
    admitUs += admittedAt - start
    settleUs += settledAt - admittedAt
    measured += batch
  }
  console.log(`${`redis scripts, runs of ${batch}`.padEnd(44)} ${(admitUs / measured).toFixed(1).padStart(8)} us an admission, ${(settleUs / measured).toFixed(1)} us a settlement inside EVALSHA`)
}

const keyPrefix = `measure:${randomBase62(8)}:`
const redisUrl = await testRedisUrl()
const clients = [createRedisClient(redisUrl), createRedisClient(redisUrl)]
await Promise.all(clients.map((client) => waitForRedis(client, 5_000)))
const redisStores = clients.map((client) => new RedisAdmissionStore(client, { keyPrefix }))
await redisStores[0]!.loadScripts()

try {
  console.log(`bun ${Bun.version}, ${navigator.hardwareConcurrency} cores, ${seconds} s per run, ${orgs.length} organizations x ${keysPerOrg} keys`)
  let pings = 0
  const pingDeadline = performance.now() + seconds * 1_000
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (performance.now() < pingDeadline) {
      await clients[0]!.ping()
      pings++
    }
  }))
  console.log(`${'redis PING, one client, 64 in flight'.padEnd(44)} ${Math.round(pings / seconds).toLocaleString('en').padStart(8)} round trips/s`)
  for (const concurrency of [1, 16, 64, 256]) await run(`redis, one client, ${concurrency} in flight`, [redisStores[0]!], concurrency)
  await run('redis, two clients, 256 in flight', redisStores, 256)
  await run('in-process, 64 in flight', [new InProcessAdmissionStore()], 64)
  for (const batch of [1, 20, 100]) await scriptTime(redisStores[0]!, clients[0]!, batch)
} finally {
  const keys: string[] = []
  for await (const batch of clients[0]!.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 1_000 })) keys.push(...batch)
  for (let i = 0; i < keys.length; i += 500) await clients[0]!.unlink(keys.slice(i, i + 500))
  for (const client of clients) client.destroy()
}
