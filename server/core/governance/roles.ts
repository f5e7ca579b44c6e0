import { GatewayError } from '@nilegate/shared/errors'
import { can, type MembershipRole, type OrgAction } from '@nilegate/shared/roles'

export { can, membershipRoles, type MembershipRole, type OrgAction } from '@nilegate/shared/roles'

/** Throws 403 permission_denied unless `role` may do `action`. */
export function requirePermission(role: MembershipRole, action: OrgAction): void {
  if (!can(role, action)) {
    throw new GatewayError('permission_denied', `Your role '${role}' does not allow ${action.replace('.', ' ')}; ask an owner or admin of the organization.`)
  }
}
