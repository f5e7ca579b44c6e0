import { expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { apiKeys, organizations, projects } from '../../../../server/adapters/postgres/schema'
import { rowsOf } from '../../../../server/adapters/postgres/drizzle'
import { hashApiKey } from '../../../../server/core/api-keys'
import { describeEachDatabase } from '../../../support/databases'

describeEachDatabase('findApiKeyByHash', (context) => {
  async function demoKey(rpmLimit: number | null = null) {
    const { db } = context.current
    const tenant = await db.createDemoTenant({ rpmLimit })
    const hashHex = hashApiKey(tenant.apiKey)
    const [key] = await db.drizzle.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.secretHash, hashHex))
    return { tenant, hashHex, keyId: key!.id }
  }

  test('finds a key by the hash of its secret, with its organization status', async () => {
    const { tenant, hashHex, keyId } = await demoKey(30)

    const identity = await context.current.db.identities.findApiKeyByHash(hashHex)

    expect(identity).toEqual({
      keyId,
      orgId: tenant.organizationId,
      projectId: tenant.projectId,
      revokedAt: null,
      expiresAt: null,
      scopes: ['models.read', 'chat.completions', 'embeddings'],
      rpmLimit: 30,
      orgStatus: 'active',
      planTier: 'enterprise',
      orgRpmCeiling: null,
      projectRpmOverride: null,
      keyMonthlyCapMicros: null,
      projectMonthlyCapMicros: null,
      billingTimeZone: 'Africa/Cairo',
      requiresRegion: null,
      ipAllowList: [],
      orgAllowedModels: null,
      projectEnabledModels: null,
      projectArchivedAt: null,
    })
  })

  test('answers null for a hash no key has', async () => {
    const identity = await context.current.db.identities.findApiKeyByHash(hashApiKey('sk-unknown'))

    expect(identity).toBeNull()
  })

  test('returns revoked and expired keys with their timestamps, for the caller to refuse', async () => {
    const { db } = context.current
    const revoked = await demoKey()
    const expired = await demoKey()
    const revokedAt = new Date('2025-03-01T10:00:00.123Z')
    const expiresAt = new Date('2025-04-01T00:00:00.000Z')
    await db.drizzle.update(apiKeys).set({ revokedAt }).where(eq(apiKeys.id, revoked.keyId))
    await db.drizzle.update(apiKeys).set({ expiresAt }).where(eq(apiKeys.id, expired.keyId))

    const revokedIdentity = await db.identities.findApiKeyByHash(revoked.hashHex)
    const expiredIdentity = await db.identities.findApiKeyByHash(expired.hashHex)

    expect(revokedIdentity).toMatchObject({ revokedAt: revokedAt.getTime(), expiresAt: null })
    expect(expiredIdentity).toMatchObject({ revokedAt: null, expiresAt: expiresAt.getTime() })
  })

  test("reports a suspended organization's status", async () => {
    const { db } = context.current
    const { tenant, hashHex } = await demoKey()
    await db.drizzle.update(organizations).set({ status: 'suspended' }).where(eq(organizations.id, tenant.organizationId))

    const identity = await db.identities.findApiKeyByHash(hashHex)

    expect(identity?.orgStatus).toBe('suspended')
  })

  test('reads every field a key, its project and its organization can set, as the types they have', async () => {
    const { db } = context.current
    const { tenant, hashHex } = await demoKey(45)
    const archivedAt = new Date('2026-01-02T03:04:05.678Z')
    const expiresAt = new Date('2027-05-06T07:08:09.012Z')
    await db.drizzle.update(organizations).set({ planTier: 'team', customRpmCeiling: 900, billingTimeZone: 'Europe/Berlin', requiresRegion: 'eu', allowedModels: ['a/one', 'b/two'] }).where(eq(organizations.id, tenant.organizationId))
    await db.drizzle.update(projects).set({ rpmOverride: 120, monthlySpendCapMicros: 9_007_199_254_740_993n, enabledModels: ['a/one'], archivedAt }).where(eq(projects.id, tenant.projectId))
    await db.drizzle.update(apiKeys).set({ expiresAt, monthlySpendCapMicros: 12_345_678n, ipAllowList: ['10.0.0.0/8', '2001:db8::/32'], scopes: ['embeddings'] }).where(eq(apiKeys.secretHash, hashHex))

    const identity = await db.identities.findApiKeyByHash(hashHex)

    expect(identity).toMatchObject({
      expiresAt: expiresAt.getTime(),
      scopes: ['embeddings'],
      rpmLimit: 45,
      planTier: 'team',
      orgRpmCeiling: 900,
      projectRpmOverride: 120,
      keyMonthlyCapMicros: 12_345_678n,
      projectMonthlyCapMicros: 9_007_199_254_740_993n,
      billingTimeZone: 'Europe/Berlin',
      requiresRegion: 'eu',
      ipAllowList: ['10.0.0.0/8', '2001:db8::/32'],
      orgAllowedModels: ['a/one', 'b/two'],
      projectEnabledModels: ['a/one'],
      projectArchivedAt: archivedAt.getTime(),
    })
  })

  test('answers a token of any other shape than a hash with null, and a hash with quotes is only data', async () => {
    const { db } = context.current
    const { hashHex } = await demoKey()

    expect(await db.identities.findApiKeyByHash(hashHex.toUpperCase())).toBeNull()
    expect(await db.identities.findApiKeyByHash(`${hashHex.slice(0, 60)}'--`)).toBeNull()
    expect(await db.identities.findApiKeyByHash(`' or ''='`)).toBeNull()
    expect((await db.identities.findApiKeyByHash(hashHex))?.rpmLimit).toBeNull()
  })

  test('looks many keys up in one statement: each hash its own identity or null, in the order asked', async () => {
    const { db } = context.current
    const keys = await Promise.all([demoKey(10), demoKey(20), demoKey(30)])
    const [first, second, third] = keys.map((key) => key.hashHex) as [string, string, string]
    const one = await db.identities.findApiKeyByHash(second)

    const found = await db.identities.findApiKeysByHashes([third, hashApiKey('sk-unknown'), first, 'not a hash', second, third])

    expect(found.map((identity) => identity?.rpmLimit ?? null)).toEqual([30, null, 10, null, 20, 30])
    expect(found.map((identity) => identity?.keyId ?? null)).toEqual([keys[2]!.keyId, null, keys[0]!.keyId, null, keys[1]!.keyId, keys[2]!.keyId])
    // The same identity as a lookup of one key.
    expect(found[4]).toEqual(one)
    expect(await db.identities.findApiKeysByHashes([])).toEqual([])
    expect(await db.identities.findApiKeysByHashes(['not a hash', `${first.slice(0, 60)}'--`])).toEqual([null, null])
  })

  if (context.kind === 'pglite') {
    // PGlite sends each query unnamed, planned every time; the lookup runs on every cold key.
    test('looks keys up with statements PGlite prepared once', async () => {
      const { db } = context.current
      const [a, b] = await Promise.all([demoKey(), demoKey()])
      for (let i = 0; i < 2; i++) {
        await db.identities.findApiKeyByHash(a.hashHex)
        await db.identities.findApiKeysByHashes([a.hashHex, b.hashHex])
      }

      const result = await db.drizzle.execute<{ name: string }>(sql`select name from pg_prepared_statements where name like 'pglite_find_api_key%' order by name`)

      expect(rowsOf<{ name: string }>(result).map((row) => row.name)).toEqual(['pglite_find_api_key_by_hash', 'pglite_find_api_keys_by_hashes'])
    })
  }
})
