import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import postgres from 'postgres'
import { createClient } from 'redis'
import { createPostgresDatabase } from '../support/databases'
import { childEnv, runBun } from '../support/processes'
import { startRedisServer, type RedisServer } from '../support/redis-server'

// The suites run on machines where other programs use Redis and Postgres: they may flush only a
// redis-server they started, and drop only databases they created (issue #28, "Test without harm").

const testsDir = new URL('..', import.meta.url).pathname
// Where emptying a server or dropping a database may be written: the helpers that do it only to
// what the tests started or created, and a test of a cluster master that support/redis-cluster.ts started.
const allowed = ['support/redis-server.ts', 'support/databases.ts', 'integration/redis-cluster.test.ts', 'integration/shared-servers.test.ts']
const destructive = [
  /\.(flushDb|flushAll|flushdb|flushall|scriptFlush)\s*\(/,
  /['"`](FLUSHDB|FLUSHALL)\b/i,
  /['"`]SCRIPT['"`]\s*,\s*['"`]FLUSH['"`]/i,
  /\bdrop\s+database\b/i,
]

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|tsx|sh)$/.test(entry.name) && !entry.parentPath.includes('node_modules'))
    .map((entry) => relative(testsDir, join(entry.parentPath, entry.name)))
}

describe('the test files', () => {
  test('flush a Redis or drop a database only through the helpers that refuse what the tests did not start', () => {
    const found: string[] = []
    for (const path of sourceFiles(testsDir)) {
      if (allowed.includes(path)) continue
      for (const [index, line] of readFileSync(join(testsDir, path), 'utf8').split('\n').entries()) {
        if (destructive.some((pattern) => pattern.test(line))) found.push(`tests/${path}:${index + 1}: ${line.trim()}`)
      }
    }

    expect(found).toEqual([])
  })
})

/** Keys and a loaded script put on a Redis the suites did not start, as another program's. */
const sentinelDatabases = [0, 9, 10, 11, 12, 13, 14, 15]
const sentinelKey = `sentinel:${crypto.randomUUID()}`
const sentinelScript = `return '${sentinelKey}'`

async function plantSentinels(url: (database: number) => string): Promise<string> {
  let sha = ''
  for (const database of sentinelDatabases) {
    const client = await createClient({ url: url(database) }).connect()
    await client.set(sentinelKey, String(database))
    sha = await client.scriptLoad(sentinelScript)
    await client.close()
  }
  return sha
}

/** Per database index, every key there, and whether the script is still loaded. */
async function readSentinels(url: (database: number) => string, sha: string): Promise<{ keys: Record<number, string[]>; scriptLoaded: boolean }> {
  const keys: Record<number, string[]> = {}
  let scriptLoaded = false
  for (const database of sentinelDatabases) {
    const client = await createClient({ url: url(database) }).connect()
    keys[database] = (await client.keys('*')).sort()
    scriptLoaded = (await client.scriptExists(sha))[0] === 1
    await client.close()
  }
  return { keys, scriptLoaded }
}

describe('suites run with TEST_REDIS_URL naming a Redis they did not start', () => {
  let other: RedisServer
  let sha: string
  let sentinelDatabase: Awaited<ReturnType<typeof createPostgresDatabase>>

  beforeAll(async () => {
    other = await startRedisServer()
    sha = await plantSentinels((database) => other.url(database))
    sentinelDatabase = await createPostgresDatabase()
    const sql = postgres(sentinelDatabase.url, { max: 1, onnotice: () => {} })
    await sql`create table sentinel (note text)`
    await sql`insert into sentinel values ('still here')`
    await sql.end({ timeout: 5 })
  })
  afterAll(async () => {
    await other?.stop()
    await sentinelDatabase?.drop()
  })

  test("leave its keys, its scripts and another scratch database alone, and delete every key of their own", async () => {
    const env = childEnv({ TEST_REDIS_URL: other.url(0) })
    // The files that used to flush or script-flush a shared Redis, as far as they run in seconds.
    const runs = await Promise.all([
      runBun(['test', '--timeout', '30000', 'tests/integration/pass-lease.test.ts', 'tests/integration/login-limiter.test.ts', 'tests/integration/admission/redis-admission-store.test.ts'], env, 120_000),
      runBun(['test', '--timeout', '30000', 'tests/integration/reconcile.test.ts', '-t', 'bun server/cli.ts reconcile'], env, 120_000),
    ])

    expect(runs.map((run) => (run.code === 0 ? 'passed' : `${run.code}:\n${run.stderr.slice(-3000)}`))).toEqual(['passed', 'passed'])
    expect(await readSentinels((database) => other.url(database), sha)).toEqual({
      keys: Object.fromEntries(sentinelDatabases.map((database) => [database, [sentinelKey]])),
      scriptLoaded: true,
    })
    const sql = postgres(sentinelDatabase.url, { max: 1, onnotice: () => {} })
    try {
      expect([...(await sql<Array<{ note: string }>>`select note from sentinel`)]).toEqual([{ note: 'still here' }])
    } finally {
      await sql.end({ timeout: 5 })
    }
  }, 150_000)
})
