import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import { GatewayError } from '@nilegate/shared/errors'
import { reviveError, serializeError } from '../../../../server/adapters/postgres/cross-thread-error'
import { openDatabase, type Database } from '../../../../server/adapters/postgres/database'
import { apiKeys, organizations, projects, usageEvents } from '../../../../server/adapters/postgres/schema'
import { databaseWorkerUrl, DatabaseWorkerExitedError, openDatabaseInWorker, type WorkerDatabase } from '../../../../server/adapters/postgres/worker-database'
import { hashApiKey } from '../../../../server/core/api-keys'
import type { LedgerCounters } from '../../../../server/core/admission'
import type { ApiKeyIdentity } from '../../../../server/core/ports'
import { createMigratedPgliteDir, createTempDir, slowHookTimeoutMs } from '../../../support/databases'
import { usageEvent } from '../../../support/usage-events'

const beyondDoublePrecision = 9_007_199_254_740_993n

/** Ledger counters without their snapshot's name, which differs between any two reads. */
function countersOf(counters: LedgerCounters): Omit<LedgerCounters, 'snapshot'> {
  const { snapshot: _, ...rest } = counters
  return rest
}

/** Opens the PGlite of `dataDir` in this thread, runs `work`, and closes it again. */
async function inThread<T>(dataDir: string, work: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase({ databaseUrl: null, dataDir })
  try {
    return await work(db)
  } finally {
    await db.close()
  }
}

describe('openDatabaseInWorker: reads', () => {
  let dataDir: { path: string; remove(): void }
  let db: WorkerDatabase
  // Written and read in this thread first; the worker must answer the same.
  let fixture: { hashHex: string; orgId: string; projectId: string; identity: ApiKeyIdentity | null; counters: LedgerCounters }

  beforeAll(async () => {
    dataDir = await createMigratedPgliteDir()
    fixture = await inThread(dataDir.path, async (db) => {
      const tenant = await db.createDemoTenant({ balanceMicros: beyondDoublePrecision, rpmLimit: 42, planTier: 'team' })
      const hashHex = hashApiKey(tenant.apiKey)
      await db.drizzle
        .update(apiKeys)
        .set({ monthlySpendCapMicros: beyondDoublePrecision, expiresAt: new Date('2031-01-02T03:04:05.678Z'), revokedAt: new Date('2030-06-07T08:09:10.987Z'), scopes: ['embeddings'] })
        .where(eq(apiKeys.secretHash, hashHex))
      await db.drizzle.update(projects).set({ monthlySpendCapMicros: 123_456_789_012n, rpmOverride: 77 }).where(eq(projects.id, tenant.projectId))
      await db.drizzle.update(organizations).set({ customRpmCeiling: 900, status: 'suspended', billingTimeZone: 'Asia/Riyadh' }).where(eq(organizations.id, tenant.organizationId))
      const org = tenant.organizationId
      await db.usage.insertUsageEvents([
        usageEvent({ orgId: org, requestId: `req_1_${org}`, keyId: 'key_a', projectId: tenant.projectId, costMicros: 7n, createdAt: new Date('2026-06-01T00:00:00.001Z') }),
        usageEvent({ orgId: org, requestId: `req_2_${org}`, keyId: 'key_b', projectId: tenant.projectId, costMicros: 1_000_000n, createdAt: new Date('2026-06-30T20:59:59.999Z') }),
      ])
      return {
        hashHex,
        orgId: org,
        projectId: tenant.projectId,
        identity: await db.identities.findApiKeyByHash(hashHex),
        counters: await db.ledger.readCounters(org, '202606', 'Asia/Riyadh'),
      }
    })
    db = await openDatabaseInWorker({ dataDir: dataDir.path })
  }, slowHookTimeoutMs)

  afterAll(async () => {
    await db?.close()
    dataDir?.remove()
  }, slowHookTimeoutMs)

  test('finds an API key with every field the in-thread lookup gives, bigint caps and ms timestamps included', async () => {
    const identity = await db.identities.findApiKeyByHash(fixture.hashHex)

    expect(identity).toEqual(fixture.identity!)
    expect(identity).toMatchObject({
      orgId: fixture.orgId,
      projectId: fixture.projectId,
      revokedAt: Date.parse('2030-06-07T08:09:10.987Z'),
      expiresAt: Date.parse('2031-01-02T03:04:05.678Z'),
      scopes: ['embeddings'],
      rpmLimit: 42,
      orgStatus: 'suspended',
      planTier: 'team',
      orgRpmCeiling: 900,
      projectRpmOverride: 77,
      billingTimeZone: 'Asia/Riyadh',
    })
    expect(identity!.keyMonthlyCapMicros).toBe(beyondDoublePrecision)
    expect(identity!.projectMonthlyCapMicros).toBe(123_456_789_012n)
  })

  test('answers null for a hash no key has', async () => {
    expect(await db.identities.findApiKeyByHash(hashApiKey('sk-unknown'))).toBeNull()
  })

  test('reads the same ledger counters as in-thread, as bigints in Maps', async () => {
    const counters = await db.ledger.readCounters(fixture.orgId, '202606', 'Asia/Riyadh')

    expect(countersOf(counters)).toEqual(countersOf(fixture.counters))
    expect(countersOf(counters)).toEqual({
      month: '202606',
      balanceMicros: beyondDoublePrecision - 1_000_007n,
      keySpend: new Map([['key_a', 7n], ['key_b', 1_000_000n]]),
      projectSpend: new Map([[fixture.projectId, 1_000_007n]]),
      recordedIds: [],
    })
    expect(counters.keySpend).toBeInstanceOf(Map)
    expect(typeof counters.balanceMicros).toBe('bigint')
  })

  test('finds the usage rows written after a read of the counters, by time and by request id', async () => {
    const tenant = await db.createDemoTenant()
    const org = tenant.organizationId
    const { snapshot } = await db.ledger.readCounters(org, '202606', 'Asia/Riyadh')
    const late = usageEvent({ orgId: org, requestId: `req_late_${org}`, costMicros: 3n, createdAt: new Date('2026-06-30T21:00:00Z') })
    await db.usage.insertUsageEvents([late])

    // 00:00 on 1 July in Riyadh (UTC+3).
    expect(await db.ledger.readUsageAfter(org, snapshot!, Date.parse('2026-06-01T00:00:00Z'), Date.parse('2026-08-01T00:00:00Z'), 'Asia/Riyadh')).toEqual([
      { requestId: late.requestId, keyId: late.keyId, projectId: late.projectId, month: '202607', costMicros: 3n },
    ])
    expect(await db.ledger.findUsageRows(org, snapshot!, [late.requestId, 'req_not_written'], 'Asia/Riyadh')).toEqual({
      after: [{ requestId: late.requestId, keyId: late.keyId, projectId: late.projectId, month: '202607', costMicros: 3n }],
      missingIds: ['req_not_written'],
    })
  })

  test('creates demo tenants whose keys authenticate through the worker', async () => {
    const tenant = await db.createDemoTenant({ balanceMicros: 5n, rpmLimit: 3 })

    const identity = await db.identities.findApiKeyByHash(hashApiKey(tenant.apiKey))

    expect(tenant.balanceMicros).toBe(5n)
    expect(identity).toMatchObject({ orgId: tenant.organizationId, projectId: tenant.projectId, rpmLimit: 3, keyMonthlyCapMicros: null })
  })

  test('seeds nothing once an organization exists', async () => {
    expect(await db.hasOrganizations()).toBe(true)
    expect(await db.seedDemoIfEmpty()).toBeNull()
  })

  test('answers concurrent calls each with its own result', async () => {
    const unknown = Array.from({ length: 20 }, (_, index) => hashApiKey(`sk-unknown-${index}`))

    const [tenants, known, missing, counters] = await Promise.all([
      Promise.all([db.createDemoTenant(), db.createDemoTenant()]),
      Promise.all(Array.from({ length: 20 }, () => db.identities.findApiKeyByHash(fixture.hashHex))),
      Promise.all(unknown.map((hashHex) => db.identities.findApiKeyByHash(hashHex))),
      db.ledger.readCounters(fixture.orgId, '202606', 'Asia/Riyadh'),
    ])

    expect(new Set(tenants.map((tenant) => tenant.organizationId)).size).toBe(2)
    expect(known).toEqual(Array.from({ length: 20 }, () => fixture.identity!))
    expect(missing).toEqual(unknown.map(() => null))
    expect(countersOf(counters)).toEqual(countersOf(fixture.counters))
  })

  test('rethrows an error of the worker as its class, with its message', async () => {
    const refused = db.createDemoTenant({ balanceMicros: -1n })

    await expect(refused).rejects.toThrow(RangeError)
    await expect(refused).rejects.toThrow('a demo balance cannot be negative')
  })
})

describe('openDatabaseInWorker: writes', () => {
  test('usage events land as the exact rows, once per request id on replay', async () => {
    const dataDir = await createMigratedPgliteDir()
    const events = [
      usageEvent({ requestId: 'req_a', costMicros: beyondDoublePrecision, createdAt: new Date('2025-05-01T12:00:00.123Z') }),
      usageEvent({ requestId: 'req_b', endpoint: 'embeddings', stream: false, status: 499, region: null, createdAt: new Date('2025-05-01T12:00:00.999Z') }),
      usageEvent({ requestId: 'req_c', costMicros: 0n, createdAt: new Date('2025-05-01T12:00:01.001Z') }),
    ]
    try {
      const db = await openDatabaseInWorker({ dataDir: dataDir.path })
      await db.usage.insertUsageEvents(events.slice(0, 2))
      await db.usage.insertUsageEvents(events.slice(0, 2))
      await db.usage.insertUsageEvents(events.slice(1))
      await db.usage.insertUsageEvents([])
      await db.close()

      const rows = (await inThread(dataDir.path, (db) => db.drizzle.select().from(usageEvents).orderBy(asc(usageEvents.requestId)))).map(({ unbilledPromptTokens: _prompt, unbilledCompletionTokens: _completion, unbilledMicros: _micros, ...event }) => event)

      expect(rows).toEqual(events)
      expect(rows.map((row) => row.createdAt.getTime())).toEqual(events.map((event) => event.createdAt.getTime()))
      expect(rows[0]!.costMicros).toBe(beyondDoublePrecision)
    } finally {
      dataDir.remove()
    }
  }, slowHookTimeoutMs)

  test('migrates a fresh data directory and seeds exactly one demo tenant, even when asked concurrently', async () => {
    const dataDir = createTempDir('pglite-fresh')
    try {
      const db = await openDatabaseInWorker({ dataDir: dataDir.path })
      const before = await db.hasOrganizations()

      const seeded = await Promise.all([db.seedDemoIfEmpty(), db.seedDemoIfEmpty(), db.seedDemoIfEmpty()])
      const demo = seeded.find((tenant) => tenant !== null)!
      const identity = await db.identities.findApiKeyByHash(hashApiKey(demo.apiKey))
      await db.close()

      expect(before).toBe(false)
      expect(seeded.filter((tenant) => tenant !== null)).toHaveLength(1)
      expect(demo.balanceMicros).toBe(1_000_000_000_000n)
      expect(identity?.orgId).toBe(demo.organizationId)
    } finally {
      dataDir.remove()
    }
  }, slowHookTimeoutMs)

  // Creating a cluster leaves its thread holding hundreds of MiB: a thread of its own does it and ends.
  test('creates a fresh data directory in a thread that has ended before the serving one starts, and reopens one thread alone', async () => {
    const dataDir = createTempDir('pglite-fresh')
    const realWorker = globalThis.Worker
    const events: string[] = []
    globalThis.Worker = class extends realWorker {
      constructor(...args: ConstructorParameters<typeof Worker>) {
        super(...args)
        const index = events.filter((event) => event.startsWith('started')).length
        events.push(`started ${index}`)
        this.addEventListener('close', () => events.push(`ended ${index}`))
      }
    }
    try {
      const created = await openDatabaseInWorker({ dataDir: dataDir.path })
      const createdHasOrganizations = await created.hasOrganizations()
      await created.close()
      const afterCreating = events.splice(0)
      const reopened = await openDatabaseInWorker({ dataDir: dataDir.path })
      await reopened.seedDemoIfEmpty()
      const reopenedHasOrganizations = await reopened.hasOrganizations()
      await reopened.close()

      expect(afterCreating).toEqual(['started 0', 'ended 0', 'started 1', 'ended 1'])
      expect(events).toEqual(['started 0', 'ended 0'])
      expect([createdHasOrganizations, reopenedHasOrganizations]).toEqual([false, true])
    } finally {
      globalThis.Worker = realWorker
      dataDir.remove()
    }
  }, slowHookTimeoutMs)
})

describe("openDatabaseInWorker: the management API's repositories", () => {
  let dataDir: { path: string; remove(): void }
  let db: WorkerDatabase

  beforeAll(async () => {
    dataDir = await createMigratedPgliteDir()
    db = await openDatabaseInWorker({ dataDir: dataDir.path })
  }, slowHookTimeoutMs)

  afterAll(async () => {
    await db?.close()
    dataDir?.remove()
  }, slowHookTimeoutMs)

  const newUser = (email: string) => ({ email, name: 'Wanda Worker', passwordHash: 'not-a-real-hash', emailVerified: true })

  test('creates a user and a session, and finds the session by its token hash', async () => {
    const user = await db.governance.accounts.createUser(newUser('Wanda@Example.test'), null)
    const actor = { type: 'user' as const, id: user.id, email: user.email, ip: null, requestId: null }
    const { sessionId } = await db.governance.accounts.createSession({ userId: user.id, tokenHash: hashApiKey('ngs_worker'), expiresAt: new Date('2040-01-02T03:04:05.678Z'), ip: '192.0.2.1', userAgent: 'test' }, actor)

    const found = await db.governance.accounts.findSessionByTokenHash(hashApiKey('ngs_worker'))

    expect(found).toEqual({ sessionId, expiresAt: Date.parse('2040-01-02T03:04:05.678Z'), revokedAt: null, user })
    expect(user).toMatchObject({ email: 'wanda@example.test', emailVerified: true, disabled: false })
  })

  test("lists an organization's audit trail, and refuses a cursor of another organization as a GatewayError", async () => {
    const owner = await db.governance.accounts.createUser(newUser('owner@example.test'), null)
    const actor = { type: 'user' as const, id: owner.id, email: owner.email, ip: '192.0.2.1', requestId: 'req_worker' }
    const organization = await db.governance.organizations.createOrganization({ name: 'Threaded', ownerUserId: owner.id }, actor)
    const other = await db.governance.organizations.createOrganization({ name: 'Other', ownerUserId: owner.id }, actor)
    const otherRecords = await db.governance.audit.listAuditLogs({ orgId: other.id, limit: 1 })

    const { records, hasMore } = await db.governance.audit.listAuditLogs({ orgId: organization.id, limit: 10 })
    const foreignCursor = await db.governance.audit.listAuditLogs({ orgId: organization.id, limit: 10, cursor: { after: otherRecords.records[0]!.id } }).catch((error: unknown) => error)

    expect(hasMore).toBe(false)
    expect(records.map((record) => [record.action, record.target.id, record.ip, record.requestId])).toEqual([
      ['member.added', owner.id, '192.0.2.1', 'req_worker'],
      ['organization.created', organization.id, '192.0.2.1', 'req_worker'],
    ])
    expect(organization.balanceMicros).toBe(0n)
    expect(foreignCursor).toBeInstanceOf(GatewayError)
    expect(foreignCursor).toMatchObject({ code: 'invalid_request', status: 400, param: 'after' })
  })

  test('a duplicate e-mail address crosses the thread as a 409 conflict GatewayError', async () => {
    await db.governance.accounts.createUser(newUser('twice@example.test'), null)

    const again = await db.governance.accounts.createUser(newUser('TWICE@example.test'), null).catch((error: unknown) => error)

    expect(again).toBeInstanceOf(GatewayError)
    expect(again).toMatchObject({ code: 'conflict', status: 409, param: 'email' })
  })
})

describe('openDatabaseInWorker: the end of the thread', () => {
  test('a killed worker fails the pending call and every later one with a clear error', async () => {
    const dataDir = await createMigratedPgliteDir()
    const worker = new Worker(databaseWorkerUrl)
    const logged: string[] = []
    try {
      const db = await openDatabaseInWorker({ dataDir: dataDir.path, worker, log: (message) => logged.push(message) })

      // Hashing the demo password alone keeps this call in the worker for tens of milliseconds.
      const pending = db.createDemoTenant()
      worker.terminate()

      await expect(pending).rejects.toThrow(DatabaseWorkerExitedError)
      await expect(pending).rejects.toThrow('the embedded database thread exited unexpectedly')
      await expect(db.identities.findApiKeyByHash(hashApiKey('sk-anything'))).rejects.toThrow(DatabaseWorkerExitedError)
      await expect(db.usage.insertUsageEvents([usageEvent()])).rejects.toThrow('the embedded database thread exited unexpectedly')
      expect(logged).toEqual([expect.stringContaining('the embedded database thread exited unexpectedly')])
      await db.close()
    } finally {
      dataDir.remove()
    }
  }, slowHookTimeoutMs)

  test('a worker that crashes fails the pending call and every later one, and says why', async () => {
    const logged: string[] = []
    const worker = new Worker(new URL('../../../support/crashing-database-worker.ts', import.meta.url))
    const db = await openDatabaseInWorker({ dataDir: 'never opened', worker, log: (message) => logged.push(message) })

    const pending = db.hasOrganizations()

    await expect(pending).rejects.toThrow(DatabaseWorkerExitedError)
    await expect(db.seedDemoIfEmpty()).rejects.toThrow('the embedded database thread exited unexpectedly')
    expect(logged).toEqual([expect.stringContaining('the database thread crashed'), expect.stringContaining('exited unexpectedly')])
    await db.close()
  })

  test('close waits for calls in flight, closes PGlite, ends the thread, and refuses later calls', async () => {
    const dataDir = await createMigratedPgliteDir()
    const worker = new Worker(databaseWorkerUrl)
    const ended = new Promise<void>((resolve) => worker.addEventListener('close', () => resolve()))
    try {
      const db = await openDatabaseInWorker({ dataDir: dataDir.path, worker })

      const inFlight = db.createDemoTenant()
      await Promise.all([db.close(), db.close()])
      await ended

      expect((await inFlight).balanceMicros).toBe(1_000_000_000_000n)
      await expect(db.hasOrganizations()).rejects.toThrow('the embedded database is closed')
      expect(await inThread(dataDir.path, (db) => db.hasOrganizations())).toBe(true)
    } finally {
      dataDir.remove()
    }
  }, slowHookTimeoutMs)

  test('a data directory that cannot be opened fails the open and ends the thread', async () => {
    const dataDir = createTempDir('pglite-unusable')
    const worker = new Worker(databaseWorkerUrl)
    const ended = new Promise<void>((resolve) => worker.addEventListener('close', () => resolve()))
    await Bun.write(`${dataDir.path}/pglite`, 'a file where the database directory should be')
    try {
      await expect(openDatabaseInWorker({ dataDir: dataDir.path, worker })).rejects.toThrow()
      await ended
    } finally {
      dataDir.remove()
    }
  }, slowHookTimeoutMs)
})

describe('errors crossing the thread boundary', () => {
  function roundTrip(error: unknown): Error {
    return reviveError(structuredClone(serializeError(error)))
  }

  test('a GatewayError comes back as one, with its code, message, param and retry advice', () => {
    const revived = roundTrip(new GatewayError('rate_limit_exceeded', 'Slow down.', 'model', 7))

    expect(revived).toBeInstanceOf(GatewayError)
    expect(revived).toMatchObject({ code: 'rate_limit_exceeded', message: 'Slow down.', param: 'model', retryAfterS: 7, status: 429 })
  })

  test('other errors keep their class when built in, and their name, message and code', () => {
    const postgresError = Object.assign(new Error('duplicate key value violates unique constraint'), { name: 'DatabaseError', code: '23505' })

    expect(roundTrip(new TypeError('bad'))).toBeInstanceOf(TypeError)
    expect(roundTrip(postgresError)).toMatchObject({ name: 'DatabaseError', message: 'duplicate key value violates unique constraint', code: '23505' })
    expect(roundTrip('a thrown string')).toMatchObject({ message: 'a thrown string' })
  })
})
