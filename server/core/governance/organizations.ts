import { GatewayError } from '@nilegate/shared/errors'
import type { MailMessage } from '../mail'
import type { AuditActor } from './audit'
import { apiRequestLine, dashboardLink } from './mail-links'
import type { Page, PageQuery } from './pages'
import { can, requirePermission, type MembershipRole } from './roles'

export type PlanTier = 'free' | 'developer' | 'team' | 'enterprise'

export interface OrganizationRecord {
  id: string
  name: string
  planTier: PlanTier
  status: 'active' | 'suspended'
  customRpmCeiling: number | null
  allowedModels: string[] | null
  requiresRegion: string | null
  billingTimeZone: string
  balanceMicros: bigint
  /** Unix seconds. */
  createdAt: number
}

/** A user's membership, with the organization's state: what the session guard needs. */
export interface MembershipView {
  orgId: string
  role: MembershipRole
  orgStatus: 'active' | 'suspended'
}

/** An organization as one of its members sees it. */
export interface MemberOrganization {
  organization: OrganizationRecord
  role: MembershipRole
}

/** A member of an organization, with the user's name and address. */
export interface MemberRecord {
  userId: string
  name: string | null
  email: string
  role: MembershipRole
  /** Unix seconds: when the membership was created. */
  addedAt: number
}

/** Invite tokens: told apart from session tokens (`ngs_`) and API keys (`sk-`) at a glance. */
export const inviteTokenPrefix = 'ngi_'
export const inviteLifetimeMs = 7 * 24 * 60 * 60 * 1000

export type InviteStatus = 'pending' | 'accepted' | 'expired' | 'revoked'

export interface InviteRecord {
  id: string
  orgId: string
  email: string
  role: MembershipRole
  /** Unix milliseconds, all of them: the status is derived from them at read time. */
  invitedAt: number
  expiresAt: number
  acceptedAt: number | null
  revokedAt: number | null
}

/** The mail that carries an invite token: the dashboard page that accepts it, and the request that does (as the verification mail shows them). */
export function invitationMail(input: { invite: InviteRecord; token: string; organizationName: string; inviter: string; publicBaseUrl: string | null }): MailMessage {
  const { invite, token, publicBaseUrl } = input
  const link = dashboardLink(publicBaseUrl, '/invite', token)
  const how = apiRequestLine(publicBaseUrl, '/invites/accept', JSON.stringify({ token }), ['Authorization: Bearer <your access token>'])
  return {
    to: invite.email,
    subject: `You are invited to ${input.organizationName} on nilegate`,
    text:
      `${input.inviter} invited you to join the organization "${input.organizationName}" as ${invite.role}. ` +
      `Open this link, valid until ${new Date(invite.expiresAt).toUTCString()}, and sign in (or sign up) as ${invite.email} to accept:\n\n  ${link}\n\n` +
      `Or accept with the API, signed in, sending the one-time token yourself:\n\n  ${how}\n\nIf you did not expect this invitation, ignore this message.\n`,
    secrets: [token],
  }
}

/** Expiry is not stored as a status: an invite is expired from the moment `expiresAt` passes. */
export function inviteStatus(invite: InviteRecord, nowMs: number): InviteStatus {
  if (invite.revokedAt !== null) return 'revoked'
  if (invite.acceptedAt !== null) return 'accepted'
  return invite.expiresAt <= nowMs ? 'expired' : 'pending'
}

export interface NewInvite {
  orgId: string
  /** Normalized (lower-cased). */
  email: string
  role: MembershipRole
  tokenHash: string
  invitedByUserId: string
  /** Unix milliseconds. */
  invitedAt: number
  expiresAt: number
}

/**
 * The canonical spelling of an IANA time zone ('africa/cairo' -> 'Africa/Cairo'), or null when
 * `zone` is none. Bare UTC offsets are refused: monthly caps follow a zone's daylight saving rules.
 */
export function canonicalTimeZone(zone: string): string | null {
  let resolved: string
  try {
    resolved = new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone
  } catch {
    return null
  }
  return /^[+-]/.test(resolved) ? null : resolved
}

/** Throws 403 unless `actorRole` may give someone `role` (by invite or by a role change). */
export function requireMayGrant(actorRole: MembershipRole, role: MembershipRole): void {
  requirePermission(actorRole, 'members.manage')
  if (role === 'owner') requireOwnerPowers(actorRole)
}

/** Throws 403 unless `actorRole` may change or remove a member who is currently `targetRole`. */
export function requireMayManage(actorRole: MembershipRole, targetRole: MembershipRole): void {
  requirePermission(actorRole, 'members.manage')
  if (targetRole === 'owner') requireOwnerPowers(actorRole)
}

function requireOwnerPowers(actorRole: MembershipRole): void {
  if (!can(actorRole, 'owners.manage')) throw new GatewayError('permission_denied', 'Only owners may grant, change or remove the owner role.')
}

/** An organization always keeps an owner: someone must be able to manage owners and billing. */
export function lastOwnerConflict(): GatewayError {
  return new GatewayError('conflict', 'This is the last owner of the organization; make another member an owner first.')
}

export interface OrganizationStore {
  /** Creates an organization with `ownerUserId` as its owner, on the developer plan. */
  createOrganization(input: { name: string; ownerUserId: string }, actor: AuditActor): Promise<OrganizationRecord>
  /** The user's memberships, oldest first (the first is the default organization). */
  listMemberships(userId: string): Promise<MembershipView[]>
  /** The user's organizations in membership order; `after` is an organization id (400 when not one of them). */
  listMemberOrganizations(userId: string, page: PageQuery): Promise<Page<MemberOrganization>>
  getOrganization(orgId: string): Promise<OrganizationRecord | null>
  /** Changes the settings members may change; audited when something changed. */
  updateOrganization(orgId: string, changes: { name?: string; billingTimeZone?: string }, actor: AuditActor): Promise<OrganizationRecord>

  /** Members in the order they joined; `after` is a user id (400 when not a member). */
  listMembers(orgId: string, page: PageQuery): Promise<Page<MemberRecord>>
  /** Null when the user is not a member of this organization. */
  getMember(orgId: string, userId: string): Promise<MemberRecord | null>
  /**
   * Gives a member another role: 404 for a non-member, 403 by the role rules above, 409 when it
   * would leave the organization without an owner.
   */
  changeMemberRole(input: { orgId: string; userId: string; role: MembershipRole; actorRole: MembershipRole }, actor: AuditActor): Promise<MemberRecord>
  /** Removes a member (or lets one leave, when `userId` is the actor's), by the same rules. */
  removeMember(input: { orgId: string; userId: string; actorRole: MembershipRole }, actor: AuditActor): Promise<void>

  /** Invites of every status in the order they were made; `after` is an invite id (400 when unknown). */
  listInvites(orgId: string, page: PageQuery): Promise<Page<InviteRecord>>
  getInvite(orgId: string, inviteId: string): Promise<InviteRecord | null>
  /** 409 when the address is already a member's or has a pending invite. */
  createInvite(invite: NewInvite, actor: AuditActor): Promise<InviteRecord>
  /** Revokes a pending invite: 404 when not found, 409 when no longer pending. */
  revokeInvite(input: { orgId: string; inviteId: string; nowMs: number }, actor: AuditActor): Promise<InviteRecord>
  /**
   * Makes the user a member with the invite's role. Every reason to refuse (unknown token, another
   * address, not pending) is the same 404, so a token reveals nothing to whoever holds it.
   */
  acceptInvite(input: { tokenHash: string; userId: string; email: string; nowMs: number }, actor: AuditActor): Promise<MemberOrganization>
}
