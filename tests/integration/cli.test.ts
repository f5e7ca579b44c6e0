import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, watch, writeFileSync } from 'node:fs'
import { eq } from 'drizzle-orm'
import { openDatabase, type Database, type DemoTenant, type DemoTenantOptions } from '../../server/adapters/postgres/database'
import { apiKeys, organizations } from '../../server/adapters/postgres/schema'
import { controlSocketPath, startControlSocket } from '../../server/control-socket'
import { acquireDataDirLock, dataDirLockPath } from '../../server/data-dir-lock'
import { hashApiKey } from '../../server/core/api-keys'
import { createPostgresDatabase, createTempDir, slowHookTimeoutMs } from '../support/databases'
import { childEnv, deadPid, runBun, startBun } from '../support/processes'
import { closedPort } from '../support/tcp-proxy'

const demoCommand = ['server/cli.ts', 'demo']
const credentialFields = ['api_key', 'base_url', 'email', 'organization_id', 'password', 'project_id']

/** What a demo key looks like in the database it was written to. */
async function describeKey(db: Database, apiKey: string) {
  const [row] = await db.drizzle
    .select({ rpmLimit: apiKeys.rpmLimit, scopes: apiKeys.scopes, balanceMicros: organizations.balanceMicros, orgId: organizations.id, projectId: apiKeys.projectId })
    .from(apiKeys)
    .innerJoin(organizations, eq(organizations.id, apiKeys.orgId))
    .where(eq(apiKeys.secretHash, hashApiKey(apiKey)))
  return row
}

/**
 * Resolves when another process next tries to take the lock of `dataDir`: it writes a draft file
 * named after its pid first. Call before starting that process so that the event cannot be missed.
 */
function nextLockAttempt(dataDir: string): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dataDir, (_event, filename) => {
      if (filename?.startsWith('nilegate.lock.') && !filename.startsWith(`nilegate.lock.${process.pid}.`)) {
        watcher.close()
        resolve()
      }
    })
  })
}

function parseSingleJsonObject(stdout: string): Record<string, string> {
  const lines = stdout.trim().split('\n')
  expect(lines).toHaveLength(1)
  return JSON.parse(lines[0]!)
}

describe('bun server/cli.ts demo, on Postgres (DATABASE_URL)', () => {
  let server: Awaited<ReturnType<typeof createPostgresDatabase>>
  let db: Database
  const dataDir = createTempDir('cli-pg')

  beforeAll(async () => {
    server = await createPostgresDatabase()
    // Migrated here first: the CLI runs below then open a migrated database, like a gateway's.
    db = await openDatabase({ databaseUrl: server.url, dataDir: dataDir.path })
  }, slowHookTimeoutMs)
  afterAll(async () => {
    await db.close()
    await server.drop()
    dataDir.remove()
  }, slowHookTimeoutMs)

  // The command only prints the address a gateway with these settings would serve on.
  const port = closedPort()
  const env = (extra: Record<string, string> = {}) => childEnv({ DATABASE_URL: server.url, DATA_DIR: dataDir.path, HOST: '127.0.0.1', PORT: String(port), ...extra })

  test('--json prints one object with the credentials of a new tenant holding 1,000,000 EGP', async () => {
    const { code, stdout, stderr } = await runBun([...demoCommand, '--json'], env())

    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    const printed = parseSingleJsonObject(stdout)
    expect(Object.keys(printed).sort()).toEqual(credentialFields)
    expect(printed.base_url).toBe(`http://127.0.0.1:${port}/v1`)
    expect(await describeKey(db, printed.api_key!)).toEqual({
      orgId: printed.organization_id!,
      projectId: printed.project_id!,
      rpmLimit: null,
      scopes: ['models.read', 'chat.completions', 'embeddings'],
      balanceMicros: 1_000_000_000_000n,
    })
    expect(existsSync(dataDirLockPath(dataDir.path))).toBe(false)
  }, slowHookTimeoutMs)

  test('--balance-egp 0 --rpm 7 makes an empty tenant whose key is limited to 7 RPM; PUBLIC_BASE_URL is printed', async () => {
    const { code, stdout } = await runBun([...demoCommand, '--json', '--balance-egp', '0', '--rpm', '7'], env({ PUBLIC_BASE_URL: 'https://api.example.eg/v1' }))

    const printed = parseSingleJsonObject(stdout)
    expect(code).toBe(0)
    expect(printed.base_url).toBe('https://api.example.eg/v1')
    expect(await describeKey(db, printed.api_key!)).toMatchObject({ rpmLimit: 7, balanceMicros: 0n })
  }, slowHookTimeoutMs)

  test('--balance-egp takes decimals', async () => {
    const { stdout } = await runBun([...demoCommand, '--json', '--balance-egp=12.345678'], env())

    expect(await describeKey(db, parseSingleJsonObject(stdout).api_key!)).toMatchObject({ balanceMicros: 12_345_678n })
  }, slowHookTimeoutMs)

  test('without --json prints a readable summary', async () => {
    const { code, stdout } = await runBun([...demoCommand, '--balance-egp', '50'], env())

    const apiKey = /API key\s+(sk-\S+)/.exec(stdout)?.[1]
    expect(code).toBe(0)
    expect(stdout).toContain('50.000000 EGP')
    expect(stdout).toContain(`export OPENAI_BASE_URL=http://127.0.0.1:${port}/v1`)
    expect(await describeKey(db, apiKey!)).toMatchObject({ balanceMicros: 50_000_000n })
  }, slowHookTimeoutMs)

  test.each([
    [['--rpm', '0'], '--rpm'],
    [['--rpm', '2.5'], '--rpm'],
    [['--rpm', 'lots'], '--rpm'],
    [['--balance-egp', 'ten'], '--balance-egp'],
    [['--balance-egp', '1.0000001'], '--balance-egp'],
    [['--balance-egp=-5'], '--balance-egp'],
    [['--balance-egp'], '--balance-egp'],
    [['--frobnicate'], '--frobnicate'],
    [['extra'], 'extra'],
  ])('refuses %p with exit status 2 and a message naming the problem', async (args, named) => {
    const { code, stdout, stderr } = await runBun([...demoCommand, '--json', ...args], env())

    expect({ code, stdout }).toEqual({ code: 2, stdout: '' })
    expect(stderr).toContain(named)
  }, slowHookTimeoutMs)

  test('refuses an unknown command, or none, with exit status 2', async () => {
    const unknown = await runBun(['server/cli.ts', 'demolish'], env())
    const none = await runBun(['server/cli.ts'], env())

    expect([unknown.code, none.code]).toEqual([2, 2])
    expect(unknown.stderr).toContain('unknown command "demolish"')
    expect(none.stderr).toContain('Commands:')
  }, slowHookTimeoutMs)
})

describe('bun server/cli.ts demo, embedded (DATA_DIR)', () => {
  const dataDir = createTempDir('cli-embedded')
  afterAll(() => dataDir.remove())
  const port = closedPort()
  const env = () => childEnv({ DATA_DIR: dataDir.path, HOST: '127.0.0.1', PORT: String(port) })

  // One PGlite for the file: the first test creates it, the later ones reuse it.
  test('creates the tenant in PGlite under DATA_DIR, taking over a stale lock and releasing it', async () => {
    acquireDataDirLock(dataDir.path).release()
    writeFileSync(dataDirLockPath(dataDir.path), `${await deadPid()}\n`)

    const { code, stdout, stderr } = await runBun([...demoCommand, '--json', '--balance-egp', '0.5', '--rpm', '7'], env())

    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    const printed = parseSingleJsonObject(stdout)
    expect(printed.base_url).toBe(`http://127.0.0.1:${port}/v1`)
    expect(existsSync(dataDirLockPath(dataDir.path))).toBe(false)
    const lock = acquireDataDirLock(dataDir.path)
    const db = await openDatabase({ databaseUrl: null, dataDir: dataDir.path })
    try {
      expect(await describeKey(db, printed.api_key!)).toMatchObject({ orgId: printed.organization_id!, rpmLimit: 7, balanceMicros: 500_000n })
    } finally {
      await db.close()
      lock.release()
    }
  }, slowHookTimeoutMs)

  describe('beside a process that holds the data-dir lock', () => {
    const requests: DemoTenantOptions[] = []
    const cannedDemo: DemoTenant = {
      organizationId: 'org_from_gateway',
      projectId: 'proj_from_gateway',
      apiKey: 'sk-from-gateway',
      email: 'demo-gateway@nilegate.local',
      password: 'pw',
      balanceMicros: 0n,
    }
    const gateway = {
      createDemo: async (options: DemoTenantOptions) => (requests.push(options), cannedDemo),
      setOperator: async () => null,
      ledgerStatus: () => Promise.reject(new Error('not asked for')),
      retainUsage: () => Promise.reject(new Error('not asked for')),
      baseUrl: 'http://127.0.0.1:45678/v1',
    }
    let lock: ReturnType<typeof acquireDataDirLock>
    beforeAll(() => {
      lock = acquireDataDirLock(dataDir.path)
    })
    afterAll(() => lock.release())

    test('asks the gateway through its control socket, and prints the base URL the gateway reports', async () => {
      const socket = startControlSocket(dataDir.path, gateway)
      try {
        const { code, stdout } = await runBun([...demoCommand, '--json', '--balance-egp', '3', '--rpm', '9'], env())

        expect(code).toBe(0)
        expect(parseSingleJsonObject(stdout)).toEqual({
          base_url: 'http://127.0.0.1:45678/v1',
          api_key: 'sk-from-gateway',
          organization_id: 'org_from_gateway',
          project_id: 'proj_from_gateway',
          email: 'demo-gateway@nilegate.local',
          password: 'pw',
        })
        expect(requests.at(-1)).toEqual({ balanceMicros: 3_000_000n, rpmLimit: 9 })
      } finally {
        await socket.stop()
      }
    }, slowHookTimeoutMs)

    test('waits for a gateway that is still starting', async () => {
      // The CLI tries the socket before the lock: once it tried the lock, it found no gateway.
      const attempted = nextLockAttempt(dataDir.path)
      const cli = startBun([...demoCommand, '--json', '--wait-ms', '30000'], env())
      await attempted
      const socket = startControlSocket(dataDir.path, gateway)
      try {
        const { code, stdout } = await cli.finished

        expect(code).toBe(0)
        expect(parseSingleJsonObject(stdout).api_key).toBe('sk-from-gateway')
      } finally {
        await socket.stop()
      }
    }, slowHookTimeoutMs)

    test('refuses with a clear message when the holder does not answer, leaving its lock alone', async () => {
      const { code, stdout, stderr } = await runBun([...demoCommand, '--json', '--wait-ms', '200'], env())

      expect({ code, stdout }).toEqual({ code: 1, stdout: '' })
      expect(stderr).toContain(`in use by process ${process.pid}`)
      expect(stderr).toContain('Stop the gateway')
      expect(stderr).toContain('DATABASE_URL')
      expect(stderr).toContain(controlSocketPath(dataDir.path))
      expect(readFileSync(dataDirLockPath(dataDir.path), 'utf8')).toBe(`${process.pid}\n`)
    }, slowHookTimeoutMs)
  })
})
