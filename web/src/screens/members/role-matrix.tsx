import { can, membershipRoles, type OrgAction } from '@nilegate/shared/roles'

const actionNames: Record<OrgAction, string> = {
  'organization.read': 'See the organization and its balance',
  'organization.update': 'Rename it, change its billing time zone',
  'members.read': 'See members and invitations',
  'members.manage': 'Invite, change roles, remove members',
  'owners.manage': 'Make or remove owners',
  'projects.read': 'See projects',
  'projects.manage': 'Create, edit and archive projects',
  'api_keys.read': 'See API keys and their spend',
  'api_keys.manage': 'Create, edit and revoke API keys',
  'usage.read': 'See usage and spend',
  'audit_logs.read': 'Read the audit log',
}

/** What each role may do: the same table the gateway enforces. */
export function RoleMatrix() {
  return (
    <div class="table-scroll" role="region" aria-label="What each role may do" tabIndex={0}>
      <table class="table">
        <caption>What each role may do</caption>
        <thead>
          <tr>
            <th scope="col">Action</th>
            {membershipRoles.map((role) => (
              <th key={role} scope="col">
                {role}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {(Object.keys(actionNames) as OrgAction[]).map((action) => (
            <tr key={action}>
              <th scope="row">{actionNames[action]}</th>
              {membershipRoles.map((role) => {
                const allowed = can(role, action)
                return (
                  <td key={role} class={allowed ? 'allowed' : 'denied'}>
                    <span aria-hidden="true">{allowed ? '✓' : '—'}</span>
                    <span class="visually-hidden">{allowed ? 'Yes' : 'No'}</span>
                  </td>
                )
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
