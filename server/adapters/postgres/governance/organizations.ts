import { asc, eq } from 'drizzle-orm'
import { newId } from '../../../core/api-keys'
import type { OrganizationRecord, OrganizationStore } from '../../../core/governance/organizations'
import type { Drizzle } from '../drizzle'
import { memberships, organizations } from '../schema'
import { appendAudit, unixSeconds } from './common'

type OrganizationRow = typeof organizations.$inferSelect

export function toOrganizationRecord(row: OrganizationRow): OrganizationRecord {
  return {
    id: row.id,
    name: row.name,
    planTier: row.planTier,
    status: row.status,
    customRpmCeiling: row.customRpmCeiling,
    allowedModels: row.allowedModels,
    requiresRegion: row.requiresRegion,
    billingTimeZone: row.billingTimeZone,
    balanceMicros: row.balanceMicros,
    createdAt: unixSeconds(row.createdAt),
  }
}

export function createOrganizationRepository(db: Drizzle): OrganizationStore {
  return {
    async createOrganization(input, actor) {
      const id = newId('org')
      return db.transaction(async (tx) => {
        const [row] = await tx.insert(organizations).values({ id, name: input.name }).returning()
        await tx.insert(memberships).values({ orgId: id, userId: input.ownerUserId, role: 'owner' })
        await appendAudit(tx, actor, { orgId: id, action: 'organization.created', targetType: 'organization', targetId: id, after: { name: input.name } })
        await appendAudit(tx, actor, { orgId: id, action: 'member.added', targetType: 'user', targetId: input.ownerUserId, after: { role: 'owner' } })
        return toOrganizationRecord(row!)
      })
    },

    async listMemberships(userId) {
      const rows = await db
        .select({ orgId: memberships.orgId, role: memberships.role, orgStatus: organizations.status })
        .from(memberships)
        .innerJoin(organizations, eq(organizations.id, memberships.orgId))
        .where(eq(memberships.userId, userId))
        .orderBy(asc(memberships.createdAt), asc(memberships.orgId))
      return rows
    },
  }
}
