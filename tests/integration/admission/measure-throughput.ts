/**
 * Measures admit + settle pairs per second against a real Redis (node-redis, EVALSHA: TEST_REDIS_URL,
 * or a redis-server of its own) and the in-process store. Not a test: run it by hand on a quiet machine.
 *
 *   bun tests/integration/admission/measure-throughput.ts [seconds per run = 5]
 */
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { RedisAdmissionStore } from '../../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis } from '../../../server/adapters/redis/client'
import type { AdmissionStore } from '../../../server/core/admission'
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
} finally {
  const keys: string[] = []
  for await (const batch of clients[0]!.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 1_000 })) keys.push(...batch)
  for (let i = 0; i < keys.length; i += 500) await clients[0]!.unlink(keys.slice(i, i + 500))
  for (const client of clients) client.destroy()
}
