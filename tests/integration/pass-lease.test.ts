import { expect, test } from 'bun:test'
import { createRedisClient, waitForRedis } from '../../server/adapters/redis/client'
import { redisPassLease } from '../../server/adapters/redis/pass-lease'
import { randomBase62 } from '../../server/core/api-keys'
import { closedPort } from '../support/tcp-proxy'
import { testRedisUrl } from '../support/redis-server'

test('one instance of many gets the lease until it runs out, then the next one that asks', async () => {
  const url = await testRedisUrl()
  const clients = [createRedisClient(url), createRedisClient(url)]
  const key = `test:lease:${randomBase62(10)}`
  try {
    await Promise.all(clients.map((client) => waitForRedis(client, 5_000)))
    const [a, b] = clients.map((client) => redisPassLease(client, key)) as [ReturnType<typeof redisPassLease>, ReturnType<typeof redisPassLease>]

    const first = await Promise.all([a(300), b(300), a(300), b(300)])
    await Bun.sleep(400)
    const afterExpiry = await b(10_000)
    const whileHeld = await a(10_000)

    expect(first.filter(Boolean)).toHaveLength(1)
    expect([afterExpiry, whileHeld]).toEqual([true, false])
  } finally {
    await clients[0]!.del(key)
    for (const client of clients) client.destroy()
  }
})

test('Redis unreachable: the claim fails with service_unavailable instead of hanging', async () => {
  const client = createRedisClient(`redis://127.0.0.1:${closedPort()}`, { log: () => {} })
  try {
    const claim = redisPassLease(client, 'test:lease:unreachable', 200)
    await expect(claim(1_000)).rejects.toMatchObject({ code: 'service_unavailable' })
  } finally {
    client.destroy()
  }
})
