import { GatewayError } from '@nilegate/shared/errors'
import { and, asc, count, eq, gt, isNull, ne, sql, type SQL } from 'drizzle-orm'
import type { AnyPgColumn, PgSelect } from 'drizzle-orm/pg-core'
import { newId } from '../../../core/api-keys'
import {
  inviteStatus,
  lastOwnerConflict,
  requireMayGrant,
  requireMayManage,
  type InviteRecord,
  type MemberRecord,
  type OrganizationRecord,
  type OrganizationStore,
} from '../../../core/governance/organizations'
import type { Drizzle } from '../drizzle'
import { invites, memberships, organizations, users } from '../schema'
import { appendAudit, readPage, unixSeconds } from './common'

type OrganizationRow = typeof organizations.$inferSelect
type InviteRow = typeof invites.$inferSelect

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

function toInviteRecord(row: InviteRow): InviteRecord {
  return {
    id: row.id,
    orgId: row.orgId,
    email: row.email,
    role: row.role,
    invitedAt: row.createdAt.getTime(),
    expiresAt: row.expiresAt.getTime(),
    acceptedAt: row.acceptedAt?.getTime() ?? null,
    revokedAt: row.revokedAt?.getTime() ?? null,
  }
}

const memberColumns = { userId: users.id, name: users.name, email: users.email, role: memberships.role, joinedAt: memberships.createdAt }

function toMemberRecord({ joinedAt, ...member }: { userId: string; name: string | null; email: string; role: MemberRecord['role']; joinedAt: Date }): MemberRecord {
  return { ...member, addedAt: unixSeconds(joinedAt) }
}

/** Serializes the changes of one organization's members and invites, so rules that count hold. */
async function lockOrganization(tx: Drizzle, orgId: string): Promise<OrganizationRow> {
  const [row] = await tx.select().from(organizations).where(eq(organizations.id, orgId)).for('update')
  if (!row) throw new GatewayError('not_found', `No organization '${orgId}'.`)
  return row
}

async function findMember(db: Drizzle, orgId: string, userId: string): Promise<MemberRecord | null> {
  const [row] = await db
    .select(memberColumns)
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
  return row ? toMemberRecord(row) : null
}

async function requireMember(tx: Drizzle, orgId: string, userId: string): Promise<MemberRecord> {
  const member = await findMember(tx, orgId, userId)
  if (!member) throw new GatewayError('not_found', `No member '${userId}' in this organization.`, 'user_id')
  return member
}

/** 409 unless an owner other than `userId` remains. */
async function requireAnotherOwner(tx: Drizzle, orgId: string, userId: string): Promise<void> {
  const [row] = await tx
    .select({ owners: count() })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.role, 'owner'), ne(memberships.userId, userId)))
  if ((row?.owners ?? 0) === 0) throw lastOwnerConflict()
}

function inviteNotFound(inviteId: string): GatewayError {
  return new GatewayError('not_found', `No invite '${inviteId}' in this organization.`, 'invite_id')
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

    async listMemberOrganizations(userId, page) {
      const result = await readPage(
        page,
        [memberships.createdAt, memberships.orgId],
        (cursor) => db.select({ createdAt: memberships.createdAt, orgId: memberships.orgId }).from(memberships).where(and(eq(memberships.userId, userId), eq(memberships.orgId, cursor))).$dynamic(),
        (after, limit) =>
          db
            .select({ organization: organizations, role: memberships.role })
            .from(memberships)
            .innerJoin(organizations, eq(organizations.id, memberships.orgId))
            .where(and(eq(memberships.userId, userId), after))
            .orderBy(asc(memberships.createdAt), asc(memberships.orgId))
            .limit(limit),
      )
      return { items: result.items.map(({ organization, role }) => ({ organization: toOrganizationRecord(organization), role })), hasMore: result.hasMore }
    },

    async getOrganization(orgId) {
      const [row] = await db.select().from(organizations).where(eq(organizations.id, orgId))
      return row ? toOrganizationRecord(row) : null
    },

    async updateOrganization(orgId, changes, actor) {
      return db.transaction(async (tx) => {
        const current = await lockOrganization(tx, orgId)
        const before: Record<string, unknown> = {}
        const after: Record<string, unknown> = {}
        if (changes.name !== undefined && changes.name !== current.name) [before.name, after.name] = [current.name, changes.name]
        if (changes.billingTimeZone !== undefined && changes.billingTimeZone !== current.billingTimeZone) {
          ;[before.billing_time_zone, after.billing_time_zone] = [current.billingTimeZone, changes.billingTimeZone]
        }
        if (Object.keys(after).length === 0) return toOrganizationRecord(current)
        const [row] = await tx
          .update(organizations)
          .set({ name: changes.name ?? current.name, billingTimeZone: changes.billingTimeZone ?? current.billingTimeZone })
          .where(eq(organizations.id, orgId))
          .returning()
        await appendAudit(tx, actor, { orgId, action: 'organization.updated', targetType: 'organization', targetId: orgId, before, after })
        return toOrganizationRecord(row!)
      })
    },

    async listMembers(orgId, page) {
      const result = await readPage(
        page,
        [memberships.createdAt, memberships.userId],
        (cursor) => db.select({ createdAt: memberships.createdAt, userId: memberships.userId }).from(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, cursor))).$dynamic(),
        (after, limit) =>
          db
            .select(memberColumns)
            .from(memberships)
            .innerJoin(users, eq(users.id, memberships.userId))
            .where(and(eq(memberships.orgId, orgId), after))
            .orderBy(asc(memberships.createdAt), asc(memberships.userId))
            .limit(limit),
      )
      return { items: result.items.map(toMemberRecord), hasMore: result.hasMore }
    },

    getMember: (orgId, userId) => findMember(db, orgId, userId),

    async changeMemberRole({ orgId, userId, role, actorRole }, actor) {
      return db.transaction(async (tx) => {
        await lockOrganization(tx, orgId)
        const member = await requireMember(tx, orgId, userId)
        requireMayManage(actorRole, member.role)
        requireMayGrant(actorRole, role)
        if (member.role === role) return member
        if (member.role === 'owner') await requireAnotherOwner(tx, orgId, userId)
        await tx.update(memberships).set({ role }).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
        await appendAudit(tx, actor, { orgId, action: 'member.role_changed', targetType: 'user', targetId: userId, before: { role: member.role }, after: { role } })
        return { ...member, role }
      })
    },

    async removeMember({ orgId, userId, actorRole }, actor) {
      await db.transaction(async (tx) => {
        await lockOrganization(tx, orgId)
        const member = await requireMember(tx, orgId, userId)
        // Anyone may leave; removing someone else follows the role rules.
        if (userId !== actor.id) requireMayManage(actorRole, member.role)
        if (member.role === 'owner') await requireAnotherOwner(tx, orgId, userId)
        await tx.delete(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
        await appendAudit(tx, actor, { orgId, action: 'member.removed', targetType: 'user', targetId: userId, before: { role: member.role, email: member.email }, after: null })
      })
    },

    async listInvites(orgId, page) {
      const result = await readPage(
        page,
        [invites.createdAt, invites.id],
        (cursor) => db.select({ createdAt: invites.createdAt, id: invites.id }).from(invites).where(and(eq(invites.orgId, orgId), eq(invites.id, cursor))).$dynamic(),
        (after, limit) => db.select().from(invites).where(and(eq(invites.orgId, orgId), after)).orderBy(asc(invites.createdAt), asc(invites.id)).limit(limit),
      )
      return { items: result.items.map(toInviteRecord), hasMore: result.hasMore }
    },

    async getInvite(orgId, inviteId) {
      const [row] = await db.select().from(invites).where(and(eq(invites.orgId, orgId), eq(invites.id, inviteId)))
      return row ? toInviteRecord(row) : null
    },

    async createInvite(invite, actor) {
      return db.transaction(async (tx) => {
        await lockOrganization(tx, invite.orgId)
        const [member] = await tx
          .select({ userId: memberships.userId })
          .from(memberships)
          .innerJoin(users, eq(users.id, memberships.userId))
          .where(and(eq(memberships.orgId, invite.orgId), eq(users.email, invite.email)))
        if (member) throw new GatewayError('conflict', `${invite.email} is already a member of this organization.`, 'email')
        const [pending] = await tx
          .select({ id: invites.id })
          .from(invites)
          .where(and(eq(invites.orgId, invite.orgId), eq(invites.email, invite.email), isNull(invites.acceptedAt), isNull(invites.revokedAt), gt(invites.expiresAt, new Date(invite.invitedAt))))
        if (pending) throw new GatewayError('conflict', `${invite.email} already has a pending invite (${pending.id}); revoke it to invite again.`, 'email')
        const [row] = await tx
          .insert(invites)
          .values({
            id: newId('invite'),
            orgId: invite.orgId,
            email: invite.email,
            role: invite.role,
            tokenHash: invite.tokenHash,
            invitedByUserId: invite.invitedByUserId,
            createdAt: new Date(invite.invitedAt),
            expiresAt: new Date(invite.expiresAt),
          })
          .returning()
        await appendAudit(tx, actor, {
          orgId: invite.orgId,
          action: 'invite.created',
          targetType: 'invite',
          targetId: row!.id,
          after: { email: invite.email, role: invite.role, expires_at: unixSeconds(row!.expiresAt) },
        })
        return toInviteRecord(row!)
      })
    },

    async revokeInvite({ orgId, inviteId, nowMs }, actor) {
      return db.transaction(async (tx) => {
        const [row] = await tx.select().from(invites).where(and(eq(invites.orgId, orgId), eq(invites.id, inviteId))).for('update')
        if (!row) throw inviteNotFound(inviteId)
        const status = inviteStatus(toInviteRecord(row), nowMs)
        if (status !== 'pending') throw new GatewayError('conflict', `The invite is ${status}; only a pending invite can be revoked.`, 'invite_id')
        const [revoked] = await tx.update(invites).set({ revokedAt: new Date(nowMs) }).where(eq(invites.id, inviteId)).returning()
        await appendAudit(tx, actor, { orgId, action: 'invite.revoked', targetType: 'invite', targetId: inviteId, before: { status }, after: { status: 'revoked' } })
        return toInviteRecord(revoked!)
      })
    },

    async acceptInvite({ tokenHash, userId, email, nowMs }, actor) {
      return db.transaction(async (tx) => {
        const [row] = await tx.select().from(invites).where(eq(invites.tokenHash, tokenHash)).for('update')
        if (!row || row.email !== email || inviteStatus(toInviteRecord(row), nowMs) !== 'pending') {
          throw new GatewayError('not_found', 'No pending invite for your account matches this token; it may have expired or been revoked, or be meant for another address.', 'token')
        }
        const organization = await lockOrganization(tx, row.orgId)
        if (await findMember(tx, row.orgId, userId)) throw new GatewayError('conflict', 'You are already a member of this organization.', 'token')
        await tx.insert(memberships).values({ orgId: row.orgId, userId, role: row.role })
        await tx.update(invites).set({ acceptedAt: new Date(nowMs) }).where(eq(invites.id, row.id))
        await appendAudit(tx, actor, { orgId: row.orgId, action: 'invite.accepted', targetType: 'invite', targetId: row.id, before: { status: 'pending' }, after: { status: 'accepted' } })
        await appendAudit(tx, actor, { orgId: row.orgId, action: 'member.added', targetType: 'user', targetId: userId, after: { role: row.role } })
        return { organization: toOrganizationRecord(organization), role: row.role }
      })
    },
  }
}
