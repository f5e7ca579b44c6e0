/** Roles of a membership, most powerful first. */
export const membershipRoles = ['owner', 'admin', 'member', 'reader'] as const
/** A role a user holds in an organization. */
export type MembershipRole = (typeof membershipRoles)[number]

/**
 * What each role may do in an organization. Reading is open to every role except the audit trail;
 * members manage API keys; admins manage projects, people and settings; only owners touch owners.
 * The gateway enforces this table and the dashboard offers only what it allows.
 */
export const rolePermissions = {
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

/** Something a member may or may not do in an organization. */
export type OrgAction = keyof typeof rolePermissions

/** Whether `role` may do `action`. */
export function can(role: MembershipRole, action: OrgAction): boolean {
  return (rolePermissions[action] as readonly MembershipRole[]).includes(role)
}
