import postgres from 'postgres'
import { createClient } from 'redis'
import { isOwnRedis } from './redis-server'

/**
 * Deletes from the Redis at `redisUrl` the keys tagged `{o:ID}` (DESIGN.md section 4) of every
 * organization in the Postgres database at `databaseUrl`: what gateways a test ran there left
 * behind, since gateways write their keys without a prefix. Call it before dropping the database.
 * Nothing is done on a redis-server the tests started, which goes when they end; on any other
 * Redis (TEST_REDIS_URL) the rest of its keys are never touched.
 */
export async function forgetOrganizations(redisUrl: string, databaseUrl: string): Promise<void> {
  if (isOwnRedis(redisUrl)) return
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  let orgIds: Set<string>
  try {
    orgIds = new Set((await sql<Array<{ id: string }>>`select id from organizations`).map((row) => row.id))
  } finally {
    await sql.end({ timeout: 5 })
  }
  if (orgIds.size === 0) return
  const client = await createClient({ url: redisUrl }).connect()
  try {
    for await (const batch of client.scanIterator({ MATCH: '*{o:*}:*', COUNT: 1_000 })) {
      const ours = batch.filter((key) => orgIds.has(/\{o:([^}]+)\}/.exec(key)?.[1] ?? ''))
      if (ours.length > 0) await client.unlink(ours)
    }
  } finally {
    await client.close()
  }
}
