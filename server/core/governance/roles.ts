import { GatewayError } from '@nilegate/shared/errors'

/** Roles of a membership, most powerful first. */
export const membershipRoles = ['owner', 'admin', 'member', 'reader'] as const
export type MembershipRole = (typeof membershipRoles)[number]

/**
 * What a member may do in an organization. Reading is open to every role except the audit trail;
 * members manage API keys; admins manage projects, people and settings; only owners touch owners.
 */
const permissions = {
  'organization.read': ['owner', 'admin', 'member', 'reader'],
  'organization.update': ['owner', 'admin'],
  'members.read': ['owner', 'admin', 'member', 'reader'],
  'members.manage': ['owner', 'admin'],
  /** Granting, changing or removing the owner role. */
  'owners.manage': ['owner'],
  'projects.read': ['owner', 'admin', 'member', 'reader'],
  'projects.manage': ['owner', 'admin'],
  'api_keys.read': ['owner', 'admin', 'member', 'reader'],
  'api_keys.manage': ['owner', 'admin', 'member'],
  'usage.read': ['owner', 'admin', 'member', 'reader'],
  'audit_logs.read': ['owner', 'admin'],
} as const satisfies Record<string, readonly MembershipRole[]>

export type OrgAction = keyof typeof permissions

export function can(role: MembershipRole, action: OrgAction): boolean {
  return (permissions[action] as readonly MembershipRole[]).includes(role)
}

/** Throws 403 permission_denied unless `role` may do `action`. */
export function requirePermission(role: MembershipRole, action: OrgAction): void {
  if (!can(role, action)) {
    throw new GatewayError('permission_denied', `Your role '${role}' does not allow ${action.replace('.', ' ')}; ask an owner or admin of the organization.`)
  }
}
