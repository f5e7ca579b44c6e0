import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { apiKeys, creditTransactions, memberships, organizations, projects, users } from '../../../../server/adapters/postgres/schema'
import { hashApiKey } from '../../../../server/core/api-keys'
import { describeEachDatabase } from '../../../support/databases'

describeEachDatabase('createDemoTenant', (context) => {
  test('creates an organization with a verified owner, a project, a scoped key and its starting credit', async () => {
    const { db } = context.current

    const tenant = await db.createDemoTenant()

    const organizationId = tenant.organizationId
    const [organization] = await db.drizzle.select().from(organizations).where(eq(organizations.id, organizationId))
    const [user] = await db.drizzle.select().from(users).where(eq(users.email, tenant.email))
    const [membership] = await db.drizzle.select().from(memberships).where(eq(memberships.orgId, organizationId))
    const [project] = await db.drizzle.select().from(projects).where(eq(projects.orgId, organizationId))
    const [key] = await db.drizzle.select().from(apiKeys).where(eq(apiKeys.orgId, organizationId))
    const credits = await db.drizzle.select().from(creditTransactions).where(eq(creditTransactions.orgId, organizationId))
    expect(organization).toMatchObject({ planTier: 'enterprise', status: 'active', balanceMicros: 1_000_000_000_000n, billingTimeZone: 'Africa/Cairo' })
    expect(user!.emailVerifiedAt).toBeInstanceOf(Date)
    expect(await Bun.password.verify(tenant.password, user!.passwordHash)).toBe(true)
    expect(membership).toMatchObject({ userId: user!.id, role: 'owner' })
    expect(project!.id).toBe(tenant.projectId)
    expect(key).toMatchObject({
      projectId: tenant.projectId,
      secretHash: hashApiKey(tenant.apiKey),
      displayPrefix: `sk-${tenant.apiKey.slice(3, 7)}...${tenant.apiKey.slice(-4)}`,
      createdByUserId: user!.id,
      scopes: ['models.read', 'chat.completions', 'embeddings'],
      rpmLimit: null,
      revokedAt: null,
      expiresAt: null,
    })
    expect(credits.map(({ amountMicros, kind }) => ({ amountMicros, kind }))).toEqual([{ amountMicros: 1_000_000_000_000n, kind: 'demo_credit' }])
    expect(tenant.email).toMatch(/^demo-[a-z0-9]+@nilegate\.local$/)
  })

  test('takes a zero balance, a key RPM limit, a plan and a name', async () => {
    const { db } = context.current

    const tenant = await db.createDemoTenant({ balanceMicros: 0n, rpmLimit: 7, planTier: 'team', name: 'Acme' })

    const [organization] = await db.drizzle.select().from(organizations).where(eq(organizations.id, tenant.organizationId))
    const [key] = await db.drizzle.select().from(apiKeys).where(eq(apiKeys.orgId, tenant.organizationId))
    const credits = await db.drizzle.select().from(creditTransactions).where(eq(creditTransactions.orgId, tenant.organizationId))
    expect(organization).toMatchObject({ name: 'Acme', planTier: 'team', balanceMicros: 0n })
    expect(key!.rpmLimit).toBe(7)
    expect(credits).toEqual([])
  })

  test('gives concurrent callers distinct tenants whose keys all authenticate', async () => {
    const { db } = context.current

    const tenants = await Promise.all(Array.from({ length: 8 }, () => db.createDemoTenant()))

    const identities = await Promise.all(tenants.map((tenant) => db.identities.findApiKeyByHash(hashApiKey(tenant.apiKey))))
    for (const field of ['organizationId', 'projectId', 'apiKey', 'email'] as const) {
      expect(new Set(tenants.map((tenant) => tenant[field])).size).toBe(tenants.length)
    }
    expect(identities.map((identity) => identity?.orgId)).toEqual(tenants.map((tenant) => tenant.organizationId))
  })

  test('refuses a negative balance or a non-positive RPM limit and writes nothing', async () => {
    const { db } = context.current
    const organizationsBefore = await db.drizzle.$count(organizations)

    await expect(db.createDemoTenant({ balanceMicros: -1n })).rejects.toThrow(RangeError)
    await expect(db.createDemoTenant({ rpmLimit: 0 })).rejects.toThrow(RangeError)

    expect(await db.drizzle.$count(organizations)).toBe(organizationsBefore)
  })
})
