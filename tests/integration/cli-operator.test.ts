import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { eq } from 'drizzle-orm'
import { openDatabase, type Database } from '../../server/adapters/postgres/database'
import { auditLogs, users } from '../../server/adapters/postgres/schema'
import { randomBase62 } from '../../server/core/api-keys'
import { startControlSocket } from '../../server/control-socket'
import { setOperatorFlag } from '../../server/core/governance/operator'
import { acquireDataDirLock, dataDirLockPath } from '../../server/data-dir-lock'
import { createMigratedPgliteDir, openTestDatabase, slowHookTimeoutMs, type TestDatabase } from '../support/databases'
import { managementApp } from '../support/management-app'
import { childEnv, runBun } from '../support/processes'

const operatorCommand = ['server/cli.ts', 'operator']

/** A verified account with a made-up address; returns its id and address. */
async function createAccount(db: Database): Promise<{ id: string; email: string }> {
  const email = `ops-${randomBase62(10).toLowerCase()}@example.test`
  const user = await db.governance.accounts.createUser({ email, name: null, passwordHash: 'not-a-real-hash', emailVerified: true }, null)
  return { id: user.id, email }
}

async function operatorState(db: Database, userId: string) {
  const [user] = await db.drizzle.select({ isOperator: users.isOperator }).from(users).where(eq(users.id, userId))
  const audit = await db.drizzle.select().from(auditLogs).where(eq(auditLogs.targetId, userId)).orderBy(auditLogs.seq)
  return {
    isOperator: user!.isOperator,
    audit: audit.filter((row) => row.action.startsWith('user.operator')).map((row) => ({ action: row.action, actor: [row.actorType, row.actorId], orgId: row.orgId, changes: row.changes })),
  }
}

describe('bun server/cli.ts operator, on Postgres (DATABASE_URL)', () => {
  let database: TestDatabase
  let db: Database

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    db = database.db
  }, slowHookTimeoutMs)
  afterAll(() => database?.dispose(), slowHookTimeoutMs)

  const env = () => childEnv({ DATABASE_URL: database.databaseUrl!, DATA_DIR: database.dataDir })

  test('grant makes an account an operator at once (its open session included), revoke takes it away; each change audited as the system', async () => {
    const account = await createAccount(db)
    const gateway = await managementApp(db)
    const session = await gateway.signUp()
    const asUser = () => gateway.send('GET', '/v1/admin/organizations', { token: session.token })

    const refusedBefore = await asUser()
    const granted = await runBun([...operatorCommand, 'grant', '--email', account.email.toUpperCase()], env())
    const grantedAgain = await runBun([...operatorCommand, 'grant', `--email=${account.email}`], env())
    const sessionGrant = await runBun([...operatorCommand, 'grant', '--email', session.email], env())
    const allowed = await asUser()
    const afterGrant = await operatorState(db, account.id)
    const revoked = await runBun([...operatorCommand, 'revoke', '--email', account.email], env())

    expect([granted.code, granted.stderr]).toEqual([0, ''])
    expect(granted.stdout).toContain(`${account.email} (${account.id}) is now a platform operator.`)
    expect([grantedAgain.code, grantedAgain.stdout]).toEqual([0, `${account.email} (${account.id}) already was a platform operator; nothing changed.\n`])
    expect([refusedBefore.status, sessionGrant.code, allowed.status]).toEqual([403, 0, 200])
    expect(afterGrant.isOperator).toBe(true)
    expect([revoked.code, revoked.stdout]).toEqual([0, `${account.email} (${account.id}) is no longer a platform operator.\n`])
    expect(await operatorState(db, account.id)).toEqual({
      isOperator: false,
      audit: [
        { action: 'user.operator_granted', actor: ['system', 'system'], orgId: null, changes: { before: { is_operator: false }, after: { is_operator: true } } },
        { action: 'user.operator_revoked', actor: ['system', 'system'], orgId: null, changes: { before: { is_operator: true }, after: { is_operator: false } } },
      ],
    })
  }, slowHookTimeoutMs)

  test('an address without an account exits 1 saying so, and changes nothing', async () => {
    const { code, stdout, stderr } = await runBun([...operatorCommand, 'grant', '--email', 'nobody-here@example.test'], env())

    expect({ code, stdout }).toEqual({ code: 1, stdout: '' })
    expect(stderr).toContain('No account has the e-mail address nobody-here@example.test')
  }, slowHookTimeoutMs)

  test.each([
    [[], 'grant or revoke'],
    [['promote', '--email', 'a@b.co'], 'promote'],
    [['grant'], '--email'],
    [['grant', '--email', 'not-an-address'], '--email'],
    [['grant', '--email', 'a@b.co', 'extra'], 'extra'],
    [['grant', '--email', 'a@b.co', '--wait-ms', 'soon'], '--wait-ms'],
    [['grant', '--mail', 'a@b.co'], '--mail'],
  ])('refuses %p with exit status 2 and a message naming the problem', async (args, named) => {
    const { code, stdout, stderr } = await runBun([...operatorCommand, ...args], env())

    expect({ code, stdout }).toEqual({ code: 2, stdout: '' })
    expect(stderr).toContain(named)
  }, slowHookTimeoutMs)
})

describe('bun server/cli.ts operator, embedded (DATA_DIR)', () => {
  let dataDir: Awaited<ReturnType<typeof createMigratedPgliteDir>>
  let account: { id: string; email: string }

  beforeAll(async () => {
    dataDir = await createMigratedPgliteDir()
    const db = await openDatabase({ databaseUrl: null, dataDir: dataDir.path })
    try {
      account = await createAccount(db)
    } finally {
      await db.close()
    }
  }, slowHookTimeoutMs)
  afterAll(() => dataDir.remove())

  const env = () => childEnv({ DATA_DIR: dataDir.path })

  test('grants in the PGlite under DATA_DIR, taking the data-dir lock and releasing it', async () => {
    const { code, stdout, stderr } = await runBun([...operatorCommand, 'grant', '--email', account.email], env())

    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    expect(stdout).toContain('is now a platform operator')
    expect(existsSync(dataDirLockPath(dataDir.path))).toBe(false)
    const lock = acquireDataDirLock(dataDir.path)
    const db = await openDatabase({ databaseUrl: null, dataDir: dataDir.path })
    try {
      expect((await operatorState(db, account.id)).isOperator).toBe(true)
    } finally {
      await db.close()
      lock.release()
    }
  }, slowHookTimeoutMs)

  test('works through the control socket of a gateway that holds the database', async () => {
    const lock = acquireDataDirLock(dataDir.path)
    const db = await openDatabase({ databaseUrl: null, dataDir: dataDir.path })
    const socket = startControlSocket(dataDir.path, {
      createDemo: () => Promise.reject(new Error('not asked for')),
      setOperator: (email, grant) => setOperatorFlag(db.governance.operator, email, grant),
      ledgerStatus: () => Promise.reject(new Error('not asked for')),
      retainUsage: () => Promise.reject(new Error('not asked for')),
    })
    try {
      const granted = await runBun([...operatorCommand, 'grant', '--email', account.email], env())
      expect({ code: granted.code, stderr: granted.stderr }).toEqual({ code: 0, stderr: '' })
      expect((await operatorState(db, account.id)).isOperator).toBe(true)
      const unknown = await runBun([...operatorCommand, 'grant', '--email', 'nobody@example.test'], env())
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toContain('No account has the e-mail address nobody@example.test')
    } finally {
      await socket.stop()
      await db.close()
      lock.release()
    }
  }, slowHookTimeoutMs)

  test('refuses with a clear message while a gateway holds the database, leaving it alone', async () => {
    const lock = acquireDataDirLock(dataDir.path)
    try {
      const { code, stdout, stderr } = await runBun([...operatorCommand, 'revoke', '--email', account.email, '--wait-ms', '200'], env())

      expect({ code, stdout }).toEqual({ code: 1, stdout: '' })
      expect(stderr).toContain(`in use by process ${process.pid}`)
      expect(stderr).toContain('DATABASE_URL')
    } finally {
      lock.release()
    }
  }, slowHookTimeoutMs)
})
