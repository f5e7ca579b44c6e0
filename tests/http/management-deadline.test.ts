import { describe, expect, test } from 'bun:test'
import type { Governance } from '../../server/core/governance'
import { governanceWithDeadline } from '../../server/core/governance/deadline'
import { unavailableManagement } from '../support/management-app'
import { testApp } from '../support/test-app'

describe('a management route over a database that does not answer', () => {
  test('answers 503 in the error envelope instead of waiting', async () => {
    const silent = new Proxy({} as Record<string, unknown>, { get: (_, method) => (method === 'then' ? undefined : () => new Promise(() => {})) })
    const governance = governanceWithDeadline(new Proxy({} as Governance, { get: () => silent }), 20)
    const { send } = await testApp({ management: { ...unavailableManagement(), governance } })

    const response = await send('GET', '/v1/organization', undefined, { authorization: `Bearer ngs_${'x'.repeat(43)}` })

    expect(response.status).toBe(503)
    expect((await response.json()).error).toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('The database is not answering') })
  })
})
