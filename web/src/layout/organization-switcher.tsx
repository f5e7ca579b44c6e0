import { currentMembership, memberships, selectOrganization } from '../lib/session'

/** Picks the organization every page acts on; remembered on this browser. */
export function OrganizationSwitcher() {
  const current = currentMembership.value
  if (current === null) {
    return (
      <a class="top-bar-link" href="/organizations/new">
        Create an organization
      </a>
    )
  }
  return (
    <div class="org-switcher">
      <label for="organization-switcher">Organization</label>
      <select id="organization-switcher" dir="auto" value={current.id} onChange={(event) => selectOrganization(event.currentTarget.value)}>
        {memberships.value.map((membership) => (
          <option key={membership.id} value={membership.id}>
            {membership.name} ({membership.role})
          </option>
        ))}
      </select>
    </div>
  )
}
