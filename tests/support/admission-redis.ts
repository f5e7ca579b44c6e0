import { RedisAdmissionStore, type RedisAdmissionStoreOptions } from '../../server/adapters/redis/admission-store'
import { createRedisClient, waitForRedis, type RedisClient, type RedisClientOptions } from '../../server/adapters/redis/client'
import { randomBase62 } from '../../server/core/api-keys'
import { testRedisUrl } from './redis-server'

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

/** On the shared test Redis unless `url` names another. */
export async function openRedisStores(gateways: number, options: RedisAdmissionStoreOptions & RedisClientOptions & { url?: string } = {}): Promise<TestRedisStores> {
  const keyPrefix = `test:admission:${randomBase62(10)}:`
  const url = options.url ?? (await testRedisUrl())
  const clients = Array.from({ length: gateways }, () => createRedisClient(url, { log: () => {}, ...options }))
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
