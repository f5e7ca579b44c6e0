import type { AuditActor } from './audit'
import type { MembershipRole } from './roles'

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

export interface OrganizationStore {
  /** Creates an organization with `ownerUserId` as its owner, on the developer plan. */
  createOrganization(input: { name: string; ownerUserId: string }, actor: AuditActor): Promise<OrganizationRecord>
  /** The user's memberships, oldest first (the first is the default organization). */
  listMemberships(userId: string): Promise<MembershipView[]>
}
