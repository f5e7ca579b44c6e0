import { sql } from 'drizzle-orm'
import { generateApiKey, newId, randomBase62 } from '../../core/api-keys'
import { microsPerEgp } from '../../core/money'
import type { Drizzle } from './drizzle'
import { apiKeys, creditTransactions, memberships, organizations, projects, users, type PlanTier } from './schema'

/** What a demo tenant starts with; everything is optional. */
export interface DemoTenantOptions {
  /** Starting credit in micro-EGP; 0 is allowed. Default 1,000,000 EGP. */
  balanceMicros?: bigint
  /** RPM limit of the demo key; null leaves the plan's ceiling in charge. */
  rpmLimit?: number | null
  planTier?: PlanTier
  name?: string
}

/** A ready-to-use tenant. The API key and password are shown once and stored only hashed. */
export interface DemoTenant {
  organizationId: string
  projectId: string
  apiKey: string
  email: string
  password: string
  /** The starting credit, in micro-EGP. */
  balanceMicros: bigint
}

export const defaultDemoBalanceMicros = 1_000_000n * microsPerEgp
export const demoKeyScopes = ['models.read', 'chat.completions', 'embeddings']

/** Creates an organization with a verified owner, a project, an API key and its starting credit, atomically. */
export async function createDemoTenant(db: Drizzle, options: DemoTenantOptions = {}): Promise<DemoTenant> {
  const draft = await draftDemoTenant(options)
  return db.transaction(async (tx) => {
    await insertDemoTenant(tx, draft)
    return draft.tenant
  })
}

/**
 * Creates a demo tenant when the database has no organization yet, else returns null. Gateways
 * starting together on one empty database create only one (a transaction-scoped advisory lock).
 */
export async function createDemoTenantIfEmpty(db: Drizzle, options: DemoTenantOptions = {}): Promise<DemoTenant | null> {
  // Checked before hashing a password nobody will use: on every start but the first, this is all it does.
  if (await hasOrganizations(db)) return null
  const draft = await draftDemoTenant(options)
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('nilegate.seed-demo'))`)
    if (await hasOrganizations(tx)) return null
    await insertDemoTenant(tx, draft)
    return draft.tenant
  })
}

export async function hasOrganizations(db: Drizzle): Promise<boolean> {
  const rows = await db.select({ id: organizations.id }).from(organizations).limit(1)
  return rows.length > 0
}

interface DemoTenantDraft {
  tenant: DemoTenant
  userId: string
  keyId: string
  keyHash: string
  displayPrefix: string
  passwordHash: string
  organizationName: string
  balanceMicros: bigint
  rpmLimit: number | null
  planTier: PlanTier
}

// Everything random and the slow password hash happen before the transaction opens.
async function draftDemoTenant(options: DemoTenantOptions): Promise<DemoTenantDraft> {
  const balanceMicros = options.balanceMicros ?? defaultDemoBalanceMicros
  if (balanceMicros < 0n) throw new RangeError('a demo balance cannot be negative')
  const rpmLimit = options.rpmLimit ?? null
  if (rpmLimit !== null && !(Number.isSafeInteger(rpmLimit) && rpmLimit > 0)) throw new RangeError('a demo RPM limit must be a positive integer')
  const suffix = randomBase62(12).toLowerCase()
  const password = randomBase62(24)
  const key = generateApiKey()
  return {
    tenant: {
      organizationId: newId('org'),
      projectId: newId('proj'),
      apiKey: key.secret,
      email: `demo-${suffix}@nilegate.local`,
      password,
      balanceMicros,
    },
    userId: newId('user'),
    keyId: newId('key'),
    keyHash: key.hashHex,
    displayPrefix: key.displayPrefix,
    passwordHash: await Bun.password.hash(password, 'argon2id'),
    organizationName: options.name ?? `Demo ${suffix}`,
    balanceMicros,
    rpmLimit,
    planTier: options.planTier ?? 'enterprise',
  }
}

async function insertDemoTenant(tx: Drizzle, draft: DemoTenantDraft): Promise<void> {
  const { tenant } = draft
  await tx.insert(organizations).values({
    id: tenant.organizationId,
    name: draft.organizationName,
    planTier: draft.planTier,
    balanceMicros: draft.balanceMicros,
  })
  await tx.insert(users).values({ id: draft.userId, email: tenant.email, passwordHash: draft.passwordHash, emailVerifiedAt: new Date() })
  await tx.insert(memberships).values({ orgId: tenant.organizationId, userId: draft.userId, role: 'owner' })
  await tx.insert(projects).values({ id: tenant.projectId, orgId: tenant.organizationId, name: 'Default project' })
  await tx.insert(apiKeys).values({
    id: draft.keyId,
    orgId: tenant.organizationId,
    projectId: tenant.projectId,
    name: 'Demo key',
    secretHash: draft.keyHash,
    displayPrefix: draft.displayPrefix,
    createdByUserId: draft.userId,
    rpmLimit: draft.rpmLimit,
    scopes: demoKeyScopes,
  })
  if (draft.balanceMicros > 0n) {
    await tx.insert(creditTransactions).values({
      id: newId('txn'),
      orgId: tenant.organizationId,
      amountMicros: draft.balanceMicros,
      kind: 'demo_credit',
      note: 'Starting credit of a demo tenant',
    })
  }
}
