import { describe, expect, test } from 'bun:test'
import { can as serverCan, membershipRoles } from '../../../server/core/governance/roles'
import { permissions, type OrgAction, type Role } from '../../../web/src/lib/session'

describe("the dashboard's permission matrix", () => {
  test("is the gateway's, so a role sees exactly the actions the gateway allows it", () => {
    const actions = Object.keys(permissions) as OrgAction[]
    const web = actions.flatMap((action) => membershipRoles.map((role) => `${action} ${role}: ${(permissions[action] as readonly Role[]).includes(role)}`))
    const server = actions.flatMap((action) => membershipRoles.map((role) => `${action} ${role}: ${serverCan(role, action)}`))

    expect(web).toEqual(server)
  })

  test('keeps readers to reading', () => {
    const readerMay = (Object.keys(permissions) as OrgAction[]).filter((action) => (permissions[action] as readonly Role[]).includes('reader'))

    expect(readerMay.every((action) => action.endsWith('.read'))).toBe(true)
  })
})
