import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createPostgresDatabase, createTempDir, postgresAddress } from '../support/databases'
import { forgetOrganizations } from '../support/forget-organizations'
import { startGateway, type RunningGateway } from '../support/gateway-process'
import { childEnv, runBun } from '../support/processes'
import { testRedisUrl } from '../support/redis-server'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { waitFor } from '../support/wait-for'

// An instance without REDIS_URL keeps rate windows and balances in its own memory: two of them on
// one database admitted a key with RPM 4 eight times a minute, and spent an organization's credit
// twice over. So such an instance holds its database alone (a Postgres advisory lock on a
// connection of its own, which Postgres drops with the connection), and instances on Redis share it.
const scratch = createTempDir('instance-lock')
afterAll(() => scratch.remove())

/** Runs `bun server/main.ts` on `databaseUrl` expecting it not to start; its exit code and what it printed. */
async function refusedStart(databaseUrl: string, env: Record<string, string> = {}) {
  const finished = await runBun(['server/main.ts'], childEnv({ DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: '0', DATA_DIR: scratch.path, ...env }), 30_000)
  return { code: finished.code, lines: `${finished.stdout}${finished.stderr}`.split('\n').filter((line) => line.trim() !== '') }
}

/** Whether any session holds the instance lock on the database named `name`. */
async function isLockHeld(databaseUrl: string): Promise<boolean> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql<{ held: boolean }[]>`select exists(select 1 from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database()) and classid = 720254401 and objid = 26 and granted) as held`
    return row!.held
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/**
 * A scratch Postgres database for the suite, and the gateways its tests start on it: all stopped,
 * and the database dropped, after the suite. `database()` is its url once created.
 */
function scratchDatabase() {
  let created: Awaited<ReturnType<typeof createPostgresDatabase>> | undefined
  const gateways: RunningGateway[] = []
  beforeAll(async () => {
    created = await createPostgresDatabase()
  }, 30_000)
  afterAll(async () => {
    for (const gateway of gateways) await gateway.stop()
    if (created) await forgetOrganizations(await testRedisUrl(14), created.url)
    await created?.drop()
  }, 60_000)
  return { gateways, database: () => ({ url: created!.url }) }
}

describe('instances on one Postgres database without REDIS_URL', () => {
  const { gateways, database } = scratchDatabase()

  test('a second one refuses to start with one line naming REDIS_URL; so does one with REDIS_URL beside it', async () => {
    gateways.push(await startGateway({ database: 'postgres', sharedDatabaseUrl: database().url }))

    const second = await refusedStart(database().url)
    const withRedis = await refusedStart(database().url, { REDIS_URL: await testRedisUrl(14) })

    expect(second.code).toBe(1)
    expect(second.lines.filter((line) => line.startsWith('nilegate did not start'))).toEqual([expect.stringContaining('set REDIS_URL')])
    expect(second.lines.join('\n')).not.toContain('nilegate listening')
    expect(withRedis.code).toBe(1)
    expect(withRedis.lines.filter((line) => line.startsWith('nilegate did not start'))).toEqual([expect.stringContaining('without REDIS_URL')])
  }, 90_000)

  test('once the holder is killed (kill -9), a new one starts', async () => {
    const holder = gateways.pop()!
    process.kill(holder.pid, 'SIGKILL')
    await holder.stop()

    await waitFor(async () => !(await isLockHeld(database().url)), { timeoutMs: 10_000, what: 'Postgres releasing the dead holder lock' })
    const next = await startGateway({ database: 'postgres', sharedDatabaseUrl: database().url })
    gateways.push(next)

    expect(next.isRunning).toBe(true)
    expect(await isLockHeld(database().url)).toBe(true)
  }, 90_000)
})

describe('instances on one Postgres database with REDIS_URL', () => {
  const { gateways, database } = scratchDatabase()

  test('both start, and one without REDIS_URL beside them refuses naming REDIS_URL', async () => {
    const options = { database: 'postgres' as const, sharedDatabaseUrl: database().url, env: { REDIS_URL: await testRedisUrl(14) } }
    gateways.push(...(await Promise.all([startGateway(options), startGateway(options)])))

    const sole = await refusedStart(database().url)

    expect(gateways.map((gateway) => gateway.isRunning)).toEqual([true, true])
    expect(sole.code).toBe(1)
    expect(sole.lines.filter((line) => line.startsWith('nilegate did not start'))).toEqual([expect.stringContaining('REDIS_URL')])
  }, 90_000)
})

describe('an instance without REDIS_URL that loses its connection to Postgres', () => {
  const { gateways, database } = scratchDatabase()
  let proxy: TcpProxy

  beforeAll(() => {
    proxy = startTcpProxy(postgresAddress())
  })
  afterAll(() => proxy?.stop())

  test('takes its lock again when the database answers again', async () => {
    const gateway = await startGateway({ database: 'postgres', sharedDatabaseUrl: proxy.via(database().url) })
    gateways.push(gateway)

    proxy.cut()
    await gateway.waitForOutput(/took its instance lock on Postgres again/, 20_000)

    expect(gateway.isRunning).toBe(true)
    expect(await isLockHeld(database().url)).toBe(true)
  }, 60_000)

  test('stops, naming REDIS_URL, when another instance took the lock meanwhile', async () => {
    const first = gateways[0]!
    proxy.refusing = true
    proxy.cut()
    await waitFor(async () => !(await isLockHeld(database().url)), { timeoutMs: 10_000, what: 'Postgres releasing the cut connection lock' })

    const second = await startGateway({ database: 'postgres', sharedDatabaseUrl: database().url })
    gateways.push(second)
    proxy.refusing = false
    await first.waitForOutput(/nilegate is stopping: .*REDIS_URL/, 20_000)
    await waitFor(() => !first.isRunning, { timeoutMs: 20_000, what: 'the first instance exiting' })

    expect(second.isRunning).toBe(true)
  }, 90_000)
})
