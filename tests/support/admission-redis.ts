import { RedisAdmissionStore, type RedisAdmissionStoreOptions } from '../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis, type RedisClient, type RedisClientOptions } from '../../server/adapters/redis/client'
import { createClient } from 'redis'
import { randomBase62 } from '../../server/core/api-keys'

/** The Redis the integration tests use (nothing kept on disk there). */
export const testRedisUrl = Bun.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Empties the Redis database at `url`: e2e files own a database index each and clear it around them. */
export async function flushRedisDatabase(url: string): Promise<void> {
  const client = await createClient({ url }).connect()
  try {
    await client.flushDb()
  } finally {
    await client.close()
  }
}

/** Redis admission stores for `gateways` separate clients, all under one fresh key prefix. */
export interface TestRedisStores {
  keyPrefix: string
  clients: RedisClient[]
  stores: RedisAdmissionStore[]
  /** Every key under the prefix. */
  keys(): Promise<string[]>
  /** Deletes every key under the prefix and closes the clients. */
  close(): Promise<void>
}

export async function openRedisStores(gateways: number, options: RedisAdmissionStoreOptions & RedisClientOptions = {}): Promise<TestRedisStores> {
  const keyPrefix = `test:admission:${randomBase62(10)}:`
  const clients = Array.from({ length: gateways }, () => createRedisClient(testRedisUrl, { log: () => {}, ...options }))
  await Promise.all(clients.map((client) => waitForRedis(client, 5_000)))
  const stores = clients.map((client) => new RedisAdmissionStore(client, { keyPrefix, ...options }))
  await Promise.all(stores.map((store) => store.loadScripts()))
  const keys = async () => {
    const found: string[] = []
    for await (const batch of clients[0]!.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 1_000 })) found.push(...batch)
    return found
  }
  return {
    keyPrefix,
    clients,
    stores,
    keys,
    async close() {
      const left = await keys()
      for (let i = 0; i < left.length; i += 500) await clients[0]!.unlink(left.slice(i, i + 500))
      for (const client of clients) client.destroy()
    },
  }
}
