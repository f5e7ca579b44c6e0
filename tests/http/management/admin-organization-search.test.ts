import { expect, test } from 'bun:test'
import { randomBase62 } from '../../../server/core/api-keys'
import { describeEachDatabase } from '../../support/databases'
import { managementApp, signInOperator } from '../../support/management-app'

describeEachDatabase('GET /v1/admin/organizations?q=', (context) => {
  test('finds organizations by a part of their name in any case, or by their exact id, and pages the matches', async () => {
    const gateway = await managementApp(context.current.db)
    const { admin } = await signInOperator(gateway)
    const owner = await gateway.signUp()
    const tag = randomBase62(8).toLowerCase()
    const nile = await gateway.createOrganization(owner, `Nile Labs ${tag}`)
    const delta = await gateway.createOrganization(owner, `DELTA nile works ${tag}`)
    const other = await gateway.createOrganization(owner, `Sahara ${tag}`)
    const wildcard = await gateway.createOrganization(owner, `100%_sure ${tag}`)
    const ids = (response: { json: { data: Array<{ id: string }> } }) => response.json.data.map((organization) => organization.id)

    const byName = await admin('GET', `/v1/admin/organizations?q=${encodeURIComponent(`NILE`)}&limit=100`)
    const byNameAndTag = await admin('GET', `/v1/admin/organizations?q=${encodeURIComponent(`nile works ${tag.toUpperCase()}`)}`)
    const byId = await admin('GET', `/v1/admin/organizations?q=${other}`)
    const byIdPart = await admin('GET', `/v1/admin/organizations?q=${other.slice(0, -2)}`)
    const literal = await admin('GET', `/v1/admin/organizations?q=${encodeURIComponent('%_')}`)
    const firstPage = await admin('GET', `/v1/admin/organizations?q=${tag}&limit=2`)
    const secondPage = await admin('GET', `/v1/admin/organizations?q=${tag}&limit=2&after=${firstPage.json.last_id}`)
    const suspendedOnly = await admin('GET', `/v1/admin/organizations?q=${tag}&status=suspended`)
    const empty = await admin('GET', '/v1/admin/organizations?q=')

    expect(ids(byName)).toEqual(expect.arrayContaining([nile, delta]))
    expect(ids(byName)).not.toContain(other)
    expect(ids(byNameAndTag)).toEqual([delta])
    expect(ids(byId)).toEqual([other])
    expect(ids(byIdPart)).toEqual([])
    expect(ids(literal)).toEqual([wildcard])
    expect(firstPage.json).toMatchObject({ object: 'list', has_more: true })
    expect([...ids(firstPage), ...ids(secondPage)]).toEqual([nile, delta, other, wildcard])
    expect(secondPage.json.has_more).toBe(false)
    expect(suspendedOnly.json.data).toEqual([])
    expect(empty.status).toBe(400)
    expect(empty.json.error).toMatchObject({ code: 'invalid_request', param: 'q' })
  })
})
