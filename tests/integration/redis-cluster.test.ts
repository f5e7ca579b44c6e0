import { afterAll, describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { admissionScripts } from '../../server/adapters/redis/admission-scripts'
import { RedisAdmissionStore } from '../../server/adapters/redis/admission-store'
import { RedisChangeBus } from '../../server/adapters/redis/change-bus'
import { waitForRedis } from '../../server/adapters/redis/client'
import { connectRedis, isRedisCluster, type RedisClusterClient } from '../../server/adapters/redis/connect-redis'
import { RedisLoginLimiter } from '../../server/adapters/redis/login-limiter'
import { redisPassLease } from '../../server/adapters/redis/pass-lease'
import { parseRedisUrl } from '../../server/adapters/redis/redis-url'
import { randomBase62 } from '../../server/core/api-keys'
import type { GovernanceChange } from '../../server/core/governance/changes'
import { describeAdmissionStore } from '../support/admission-conformance'
import { admitRequest, newOrgId, orgCounters, settlementOf } from '../support/admission-requests'
import { useRedisCluster } from '../support/redis-cluster'
import { waitFor } from '../support/wait-for'

// A Redis Cluster of this file's own (3 masters, a replica each): every Redis use of the gateway
// works on a cluster client, and a master lost to a crash fails closed, then heals on its replica.
const cluster = useRedisCluster()
const opened: RedisClusterClient[] = []

/** A cluster client as a gateway opens one from REDIS_URL, closed with the file. */
async function clusterClient(): Promise<RedisClusterClient> {
  const connection = connectRedis(cluster.current.url, { log: () => {} })
  if (!isRedisCluster(connection)) throw new Error(`${cluster.current.url} did not open a cluster client`)
  opened.push(connection)
  await waitForRedis(connection, 10_000)
  return connection
}

describeAdmissionStore('RedisAdmissionStore (two gateways on a Redis Cluster)', async () => {
  const stores = await Promise.all([clusterClient(), clusterClient()].map(async (client) => new RedisAdmissionStore(await client)))
  await Promise.all(stores.map((store) => store.loadScripts()))
  return { stores: [stores[0]!, stores[1]!], close: async () => {} }
})

/** The node clients of the cluster's masters, by port. */
async function mastersOf(client: RedisClusterClient) {
  return Promise.all(client.masters.map(async (master) => ({ port: master.port, node: await client.nodeClient(master) })))
}

describe('REDIS_URL', () => {
  test('names one server as node-redis reads it, or a cluster by the nodes it starts from', () => {
    expect(parseRedisUrl('redis://:secret@10.0.0.9:6380/2')).toEqual({ cluster: false, url: 'redis://:secret@10.0.0.9:6380/2' })
    expect(parseRedisUrl('redis+cluster://gateway:p%40ss@10.0.0.1:7000,redis-b,[fd00::3]:7002/')).toEqual({
      cluster: true,
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-b', port: 6379 },
        { host: 'fd00::3', port: 7002 },
      ],
      username: 'gateway',
      password: 'p@ss',
      tls: false,
    })
    expect(parseRedisUrl('rediss+cluster://:secret@redis-a:6380')).toEqual({ cluster: true, nodes: [{ host: 'redis-a', port: 6380 }], password: 'secret', tls: true })
  })

  test('refuses a cluster URL with a database, options or a bad port, without repeating its password', () => {
    const refusals = ['redis+cluster://:secret@a:7000/3', 'redis+cluster://:secret@a:7000?timeout=1', 'redis+cluster://:secret@a:70000', 'redis+cluster://:secret@'].map((url) => {
      try {
        parseRedisUrl(url)
        return null
      } catch (error) {
        return (error as Error).message
      }
    })

    expect(refusals.every((message) => message !== null && !message.includes('secret'))).toBe(true)
    expect(refusals[0]).toContain('database 0 alone')
  })
})

describe('the Redis adapters on a Redis Cluster', () => {
  test('keeps each organization on one slot, and spreads organizations over every master', async () => {
    const client = await clusterClient()
    const store = new RedisAdmissionStore(client, { keyPrefix: 'spread:' })
    const orgIds = Array.from({ length: 12 }, newOrgId)

    for (const orgId of orgIds) {
      await store.load(orgId, orgCounters(10_000n))
      const request = admitRequest({ orgId })
      await store.settle(settlementOf(request, await store.admit(request).then((result) => result as { month: string })))
    }

    const holders = new Set<number>()
    for (const orgId of orgIds) {
      const master = await cluster.current.masterOf(`{o:${orgId}}`)
      holders.add(master.port)
      const node = (await mastersOf(client)).find(({ port }) => port === master.port)!.node
      const keys = await node.keys(`spread:{o:${orgId}}:*`)
      expect(keys.map((key) => key.slice(`spread:{o:${orgId}}:`.length)).sort()).toEqual(['acct', 'done', 'k:key_a:win', 'spend:202501'])
    }
    expect(holders.size).toBe(3)
  })

  test('loads its scripts on every master, and a master that lost them gets them again with the next call', async () => {
    const client = await clusterClient()
    const store = new RedisAdmissionStore(client)
    const orgId = newOrgId()
    const { port } = await cluster.current.masterOf(`{o:${orgId}}`)
    const masters = await mastersOf(client)
    const holder = masters.find((master) => master.port === port)!.node
    const admitSha = admissionScripts.find((script) => script.name === 'admit')!.sha

    await store.loadScripts()
    const loaded = await Promise.all(masters.map(({ node }) => node.scriptExists(admissionScripts.map((script) => script.sha))))
    await holder.scriptFlush()
    await store.load(orgId, orgCounters(5_000n))
    const admitted = await store.admit(admitRequest({ orgId }))

    expect(loaded.flat()).toEqual(Array.from({ length: 3 * admissionScripts.length }, () => 1))
    expect(admitted.admitted).toBe(true)
    expect(await holder.scriptExists([admitSha])).toEqual([1])
  })

  test('login limits count failures from two gateways against one window', async () => {
    const keyPrefix = `login:${randomBase62(8)}:`
    const options = { limits: { failuresPerAccountAndIp: 4 }, keyPrefix, log: (line: string) => { throw new Error(line) } }
    const [a, b] = [new RedisLoginLimiter(await clusterClient(), options), new RedisLoginLimiter(await clusterClient(), options)]

    for (let i = 0; i < 4; i++) await (i % 2 === 0 ? a : b).admitLogin('ada@example.test', '203.0.113.7')
    const refused = await b.admitLogin('ada@example.test', '203.0.113.7').then(
      () => null,
      (error: GatewayError) => error.code,
    )

    expect(refused).toBe('rate_limit_exceeded')
  })

  test('a periodic pass lease goes to one gateway at a time', async () => {
    const key = `lease:${randomBase62(8)}`
    const [a, b] = [redisPassLease(await clusterClient(), key), redisPassLease(await clusterClient(), key)]

    const claims = await Promise.all([a(10_000), b(10_000), a(10_000), b(10_000)])

    expect(claims.filter(Boolean)).toHaveLength(1)
  })

  test('a governance change published through one gateway reaches the other', async () => {
    const channel = `changes:${randomBase62(8)}`
    const [from, to] = [new RedisChangeBus(await clusterClient(), { channel, log: () => {} }), new RedisChangeBus(await clusterClient(), { channel, log: () => {} })]
    const heard: GovernanceChange[] = []
    to.subscribe((change) => heard.push(change))
    try {
      await waitFor(() => from.isListening && to.isListening, { what: 'both buses listening' })

      await from.publish({ kind: 'organization', orgId: 'org_revoked' })

      await waitFor(() => heard.length > 0, { timeoutMs: 1_000, what: 'the change arriving' })
      expect(heard).toEqual([{ kind: 'organization', orgId: 'org_revoked' }])
    } finally {
      from.close()
      to.close()
    }
  })
})

// Last in the file: it leaves the cluster with one master promoted from a replica and no replica for it.
describe('a master of the Redis Cluster killed', () => {
  test('fails closed for its organizations at once, then serves them from the promoted replica with their counters, and changes still arrive', async () => {
    const client = await clusterClient()
    const store = new RedisAdmissionStore(client)
    const channel = `changes:${randomBase62(8)}`
    const from = new RedisChangeBus(await clusterClient(), { channel, log: () => {} })
    // A new bus on `client` listens through the first master that client knows: that one is killed.
    const to = new RedisChangeBus(client, { channel, log: () => {} })
    const victim = cluster.current.nodes.find((node) => node.port === client.masters[0]!.port)!
    const heard: GovernanceChange[] = []
    to.subscribe((change) => heard.push(change))
    const onVictim: string[] = []
    while (onVictim.length < 3) {
      const orgId = newOrgId()
      if ((await cluster.current.masterOf(`{o:${orgId}}`)).port === victim.port) onVictim.push(orgId)
    }
    for (const orgId of onVictim) await store.load(orgId, orgCounters(10_000n))
    await waitFor(() => from.isListening && to.isListening, { what: 'both buses listening' })

    const { takenOver } = await cluster.current.killMaster(victim)
    const startedAt = performance.now()
    const whileDown = await store.admit(admitRequest({ orgId: onVictim[0]! })).then(
      () => 'admitted',
      (error: unknown) => (error instanceof GatewayError ? error.code : String(error)),
    )
    const refusedAfterMs = performance.now() - startedAt
    await takenOver
    let healed = false
    await waitFor(
      async () => {
        healed = await store.admit(admitRequest({ orgId: onVictim[0]! })).then((result) => result.admitted, () => false)
        return healed
      },
      { timeoutMs: 10_000, what: 'admissions on the promoted replica' },
    )
    const counters = await Promise.all(onVictim.map((orgId) => store.snapshot(orgId, '202501')))
    await waitFor(() => to.isListening, { timeoutMs: 10_000, what: 'the bus listening through another node' })
    await from.publish({ kind: 'organization', orgId: 'org_after_failover' })
    await waitFor(() => heard.length > 0, { timeoutMs: 2_000, what: 'a change heard after the failover' }).finally(() => {
      from.close()
      to.close()
    })

    expect(whileDown).toBe('service_unavailable')
    expect(refusedAfterMs).toBeLessThan(1_000)
    expect(healed).toBe(true)
    // Loaded before the crash, the counters were on the replica: the balances, and the hold taken since.
    expect(counters.map((snapshot) => [snapshot?.balanceMicros, snapshot?.heldMicros])).toEqual([
      [10_000n, 1_000n],
      [10_000n, 0n],
      [10_000n, 0n],
    ])
    expect(heard).toEqual([{ kind: 'organization', orgId: 'org_after_failover' }])
  }, 60_000)
})

afterAll(() => {
  for (const client of opened.splice(0)) client.destroy()
})
