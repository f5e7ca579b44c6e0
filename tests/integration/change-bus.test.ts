import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { PostgresChangeBus } from '../../server/adapters/postgres/change-bus'
import { openDatabase } from '../../server/adapters/postgres/database'
import { RedisChangeBus } from '../../server/adapters/redis/change-bus'
import { createRedisClient } from '../../server/adapters/redis/client'
import { ApiKeyCache } from '../../server/core/api-key-cache'
import { hashApiKey, randomBase62 } from '../../server/core/api-keys'
import type { GovernanceChange } from '../../server/core/governance/changes'
import type { RemoteChangeBus } from '../../server/core/governance/remote-change-bus'
import type { ApiKeyIdentity } from '../../server/core/ports'
import { createPostgresDatabase } from '../support/databases'
import { closedPort, startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { testRedisUrl } from '../support/redis-server'
import { keyIdentity } from '../support/test-app'
import { waitFor } from '../support/wait-for'

/** A shared server that carries changes between gateways, as the suite below uses it. */
interface Transport {
  name: string
  /** The server's URL; a test may point a bus at a proxy in front of it instead. */
  url(): string
  /** A bus on `url`, on `channel`. */
  open(url: string, channel: string, log: (message: string) => void): { bus: RemoteChangeBus; close(): void }
  /** Puts `raw` on the channel as another program might. */
  sendRaw(channel: string, raw: string): Promise<void>
  /** A URL where nothing listens. */
  unreachableUrl(): string
}

// Pub/sub ignores the database index: each test has a channel of its own.
let redisUrl: string | null = null
let redisPublisher: ReturnType<typeof createRedisClient> | null = null

const redis: Transport = {
  name: 'Redis',
  url: () => redisUrl!,
  open(url, channel, log) {
    const client = createRedisClient(url, { log: () => {} })
    const bus = new RedisChangeBus(client, { channel, log })
    return {
      bus,
      close() {
        bus.close()
        client.destroy()
      },
    }
  },
  async sendRaw(channel, raw) {
    await redisPublisher!.publish(channel, raw)
  },
  unreachableUrl: () => `redis://127.0.0.1:${closedPort()}`,
}

// LISTEN/NOTIFY is per database: the suite has one of its own.
let postgresDatabase: Awaited<ReturnType<typeof createPostgresDatabase>> | null = null
let postgresSql: postgres.Sql | null = null

const postgresTransport: Transport = {
  name: 'Postgres',
  url: () => postgresDatabase!.url,
  open(url, channel, log) {
    const bus = new PostgresChangeBus(url, { channel, log })
    return { bus, close: () => bus.close() }
  },
  async sendRaw(channel, raw) {
    await postgresSql!`select pg_notify(${channel}, ${raw})`
  },
  unreachableUrl: () => `postgres://postgres@127.0.0.1:${closedPort()}/postgres`,
}

beforeAll(async () => {
  redisUrl = await testRedisUrl()
  redisPublisher = createRedisClient(redisUrl, { log: () => {} })
  postgresDatabase = await createPostgresDatabase()
  postgresSql = postgres(postgresDatabase.url, { max: 1, onnotice: () => {} })
})

afterAll(async () => {
  redisPublisher?.destroy()
  await postgresSql?.end({ timeout: 5 })
  await postgresDatabase?.drop()
})

const opened: Array<{ close(): void }> = []
const proxies: TcpProxy[] = []

afterEach(() => {
  for (const bus of opened.splice(0)) bus.close()
  for (const proxy of proxies.splice(0)) proxy.stop()
})

// Channels are SQL identifiers for Postgres: lower case.
const newChannel = () => `test_governance_changes_${randomBase62(10).toLowerCase()}`

describe.each([redis, postgresTransport])('a change bus on a real $name', (transport) => {
  /** A gateway's bus, with what its listeners received. */
  function startBus(channel: string, url = transport.url(), log: (message: string) => void = () => {}) {
    const started = transport.open(url, channel, log)
    opened.push(started)
    const received: GovernanceChange[] = []
    started.bus.subscribe((change) => received.push(change))
    return { bus: started.bus, received }
  }

  /** A bus that is already listening. */
  async function openBus(channel: string, url = transport.url()): Promise<ReturnType<typeof startBus>> {
    const started = startBus(channel, url)
    await waitFor(() => started.bus.isListening, { what: 'the subscription' })
    return started
  }

  /** A proxy in front of the server, stopped after the test. */
  function serverProxy(): TcpProxy {
    const target = new URL(transport.url())
    const proxy = startTcpProxy({ hostname: target.hostname, port: Number(target.port) })
    proxies.push(proxy)
    return proxy
  }

  test("a change published on one instance reaches the other's listeners, and its own once", async () => {
    const channel = newChannel()
    const a = await openBus(channel)
    const b = await openBus(channel)

    await a.bus.publish({ kind: 'organization', orgId: 'org_1' })
    await waitFor(() => b.received.length > 0, { what: "B's delivery" })
    // Messages of a channel arrive in order: once B's answer reached A, A's own echo has come and gone.
    await b.bus.publish({ kind: 'model_retirements' })
    await waitFor(() => a.received.length > 1, { what: "A's delivery" })

    expect(b.received).toEqual([{ kind: 'organization', orgId: 'org_1' }, { kind: 'model_retirements' }])
    expect(a.received).toEqual([{ kind: 'organization', orgId: 'org_1' }, { kind: 'model_retirements' }])
  })

  test('carries the catalog changes that tell other instances to re-read deployments and the catalog file', async () => {
    const channel = newChannel()
    const a = await openBus(channel)
    const b = await openBus(channel)

    await a.bus.publish({ kind: 'deployments' })
    await a.bus.publish({ kind: 'catalog_file' })
    await waitFor(() => b.received.length === 2, { what: "B's deliveries" })

    expect(b.received).toEqual([{ kind: 'deployments' }, { kind: 'catalog_file' }])
  })

  test("an API key cache subscribed on B drops the organization's keys after A publishes", async () => {
    const channel = newChannel()
    const a = await openBus(channel)
    const b = await openBus(channel)
    const identities = new Map<string, ApiKeyIdentity>([
      ['a1', keyIdentity({ keyId: 'a1', orgId: 'org_a' })],
      ['b1', keyIdentity({ keyId: 'b1', orgId: 'org_b' })],
    ])
    const reads: string[] = []
    // The clock stands still, so only the change, never the background refresh, can reach the store.
    const cache = new ApiKeyCache({ findApiKeyByHash: async (hash) => (reads.push(hash), identities.get(hash) ?? null) }, { now: () => 0 })
    cache.subscribeTo(b.bus)
    await cache.lookup('a1')
    await cache.lookup('b1')
    identities.set('a1', keyIdentity({ keyId: 'a1', orgId: 'org_a', revokedAt: 7 }))
    identities.set('b1', keyIdentity({ keyId: 'b1', orgId: 'org_b', revokedAt: 7 }))

    await a.bus.publish({ kind: 'organization', orgId: 'org_a' })
    await waitFor(async () => (await cache.lookup('a1'))?.revokedAt === 7, { what: 'the revoke on B' })

    expect((cache.lookup('b1') as ApiKeyIdentity).revokedAt).toBeNull()
    expect(reads).toEqual(['a1', 'b1', 'a1'])
  })

  test('a subscriber whose connection was cut resubscribes and receives again', async () => {
    const channel = newChannel()
    const proxy = serverProxy()
    const a = await openBus(channel)
    const b = await openBus(channel, proxy.via(transport.url()))
    const stretchBefore = b.bus.coverage

    proxy.refusing = true
    proxy.cut()
    await waitFor(() => b.bus.coverage === null, { what: 'the bus noticing the cut' })
    proxy.refusing = false
    await waitFor(
      async () => {
        await a.bus.publish({ kind: 'organization', orgId: 'org_after_cut' })
        return b.received.length > 0
      },
      { what: 'a delivery after the reconnect' },
    )

    expect(b.received[0]).toEqual({ kind: 'organization', orgId: 'org_after_cut' })
    expect(b.bus.isListening).toBe(true)
    // Changes made during the cut were lost: what caches read before it is no longer covered.
    expect(stretchBefore).not.toBeNull()
    expect(b.bus.coverage).not.toBeNull()
    expect(b.bus.coverage).not.toBe(stretchBefore)
  })

  test('a bus started while the server is down listens once it is reachable', async () => {
    const channel = newChannel()
    const proxy = serverProxy()
    proxy.refusing = true
    const a = await openBus(channel)
    const b = startBus(channel, proxy.via(transport.url()))
    await waitFor(() => proxy.refused > 1, { what: 'attempts to reach the server' })
    const listeningWhileDown = b.bus.isListening

    proxy.refusing = false
    await waitFor(() => b.bus.isListening, { what: 'the subscription' })
    await a.bus.publish({ kind: 'organization', orgId: 'org_1' })
    await waitFor(() => b.received.length > 0, { what: "B's delivery" })

    expect(listeningWhileDown).toBe(false)
    expect(b.bus.coverage).not.toBeNull()
    expect(b.received).toEqual([{ kind: 'organization', orgId: 'org_1' }])
  })

  test('a change whose sending failed is sent again once the server is reachable', async () => {
    const channel = newChannel()
    const proxy = serverProxy()
    proxy.refusing = true
    const logged: string[] = []
    const a = startBus(channel, proxy.via(transport.url()), (message) => logged.push(message))
    const b = await openBus(channel)

    await a.bus.publish({ kind: 'organization', orgId: 'org_while_down' })
    const receivedWhileDown = [...b.received]
    proxy.refusing = false
    await waitFor(() => b.received.length > 0, { what: 'the change after the server came back' })
    await waitFor(() => logged.some((line) => line.includes('went through')), { what: 'the retry going through' })

    expect(receivedWhileDown).toEqual([])
    expect(a.received).toEqual([{ kind: 'organization', orgId: 'org_while_down' }])
    // At least once: the send given up on may still go out when its connection opens.
    expect(new Set(b.received.map((change) => JSON.stringify(change)))).toEqual(new Set([JSON.stringify({ kind: 'organization', orgId: 'org_while_down' })]))
    expect(logged.filter((line) => line.includes('publish'))).toEqual([expect.stringContaining('publishing a governance change failed'), expect.stringContaining('went through')])
  })

  test('ignores messages on the channel that are not changes', async () => {
    const channel = newChannel()
    const logged: string[] = []
    const a = await openBus(channel)
    const b = startBus(channel, transport.url(), (message) => logged.push(message))
    await waitFor(() => b.bus.isListening, { what: 'the subscription' })

    await transport.sendRaw(channel, 'not json')
    await transport.sendRaw(channel, JSON.stringify({ from: 'elsewhere', change: { kind: 'organization' } }))
    await a.bus.publish({ kind: 'model_retirements' })
    await waitFor(() => b.received.length > 0, { what: 'the valid change' })

    expect(b.received).toEqual([{ kind: 'model_retirements' }])
    expect(logged).toEqual([expect.stringContaining('not JSON'), expect.stringContaining('unknown governance change')])
  })

  test('without its server, publishing still reaches local listeners, logs, and does not fail', async () => {
    const logged: string[] = []
    const { bus, received } = startBus(newChannel(), transport.unreachableUrl(), (message) => logged.push(message))

    await bus.publish({ kind: 'organization', orgId: 'org_1' })

    expect(received).toEqual([{ kind: 'organization', orgId: 'org_1' }])
    expect(logged).toContainEqual(expect.stringContaining('publishing a governance change failed'))
    expect(bus.isListening).toBe(false)
    expect(bus.coverage).toBeNull()
  })
})

describe('the database announcing its own changes', () => {
  test('an edit of what a key may do, made by hand in SQL, reaches a Postgres bus on the default channel; a last use does not', async () => {
    const database = await openDatabase({ databaseUrl: postgresDatabase!.url, dataDir: '/nonexistent' })
    try {
      const tenant = await database.createDemoTenant()
      const { bus, close } = postgresTransport.open(postgresDatabase!.url, 'nilegate_governance_changes', () => {})
      opened.push({ close })
      const received: GovernanceChange[] = []
      bus.subscribe((change) => received.push(change))
      await waitFor(() => bus.isListening, { what: 'the subscription' })
      const hash = hashApiKey(tenant.apiKey)

      await postgresSql!`update api_keys set last_used_at = now() where secret_hash = ${hash}`
      await postgresSql!`update organizations set balance_micros = balance_micros + 1 where id = ${tenant.organizationId}`
      await postgresSql!`update api_keys set revoked_at = now() where secret_hash = ${hash}`
      await postgresSql!`update projects set rpm_override = 7 where id = ${tenant.projectId}`
      await postgresSql!`insert into model_retirements (model_id, retires_on) values ('nile/some-model', '2027-01-01')`
      // Notifications arrive in commit order: had the first two announced anything, it would come first.
      await waitFor(() => received.length >= 3, { what: 'the announcements' })

      const orgChange: GovernanceChange = { kind: 'organization', orgId: tenant.organizationId }
      expect(received).toEqual([orgChange, orgChange, { kind: 'model_retirements' }])
    } finally {
      await database.close()
    }
  })
})
