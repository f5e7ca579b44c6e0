import { describe, expect, test } from 'bun:test'
import { can as roleCan, membershipRoles, rolePermissions, type MembershipRole, type OrgAction } from '@nilegate/shared/roles'
import type { Me } from '../../../web/src/lib/sdk'
import { can, selectOrganization, signIn, signOut } from '../../../web/src/lib/session'

const actions = Object.keys(rolePermissions) as OrgAction[]
const allowedTo = (role: MembershipRole) => actions.filter((action) => roleCan(role, action))

function userWith(memberships: { organization_id: string; role: MembershipRole }[]): Me {
  return {
    id: 'user_1',
    email: 'dina@example.com',
    memberships: memberships.map((membership) => ({ ...membership, organization_name: membership.organization_id })),
  } as unknown as Me
}

describe('the role matrix the gateway and the dashboard share', () => {
  test('gives each role everything the roles below it may do', () => {
    const lostOnTheWayUp = membershipRoles.slice(1).flatMap((role, index) => {
      const above = membershipRoles[index]!
      return allowedTo(role).filter((action) => !roleCan(above, action)).map((action) => `${above} lacks ${action} of ${role}`)
    })

    expect(lostOnTheWayUp).toEqual([])
  })

  test('keeps readers to reading, the audit trail to admins and the owner role to owners', () => {
    expect({
      reader: allowedTo('reader').every((action) => action.endsWith('.read')),
      auditTrail: membershipRoles.filter((role) => roleCan(role, 'audit_logs.read')),
      owners: membershipRoles.filter((role) => roleCan(role, 'owners.manage')),
      owner: allowedTo('owner'),
    }).toEqual({ reader: true, auditTrail: ['owner', 'admin'], owners: ['owner'], owner: actions })
  })
})

describe("the dashboard's can()", () => {
  test("answers for the user's role in the organization the dashboard acts on", () => {
    signIn(userWith([{ organization_id: 'org_a', role: 'reader' }, { organization_id: 'org_b', role: 'member' }]), null)

    selectOrganization('org_a')
    const asReader = { keys: can('api_keys.manage'), usage: can('usage.read') }
    selectOrganization('org_b')
    const asMember = { keys: can('api_keys.manage'), usage: can('usage.read') }

    expect({ asReader, asMember }).toEqual({ asReader: { keys: false, usage: true }, asMember: { keys: true, usage: true } })
  })

  test('allows nothing once the user is signed out', () => {
    signIn(userWith([{ organization_id: 'org_a', role: 'owner' }]), null)
    selectOrganization('org_a')

    signOut()

    expect(actions.filter((action) => can(action))).toEqual([])
  })
})
