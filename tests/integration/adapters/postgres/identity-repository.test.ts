import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, organizations } from '../../../../server/adapters/postgres/schema'
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
})
