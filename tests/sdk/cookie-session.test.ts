import { describe, expect, test } from 'bun:test'
import { Nilegate, type NilegateOptions } from '../../sdk/src'

/** A client whose `fetch` records each request's method, path and headers and answers `{}` (or a list for GETs). */
function recordingClient(options: Omit<NilegateOptions, 'baseURL' | 'fetch'> = {}) {
  const sent: Array<{ method: string; path: string; csrf: string | null; authorization: string | null }> = []
  const client = new Nilegate({
    baseURL: 'https://gateway.example/v1',
    maxRetries: 0,
    ...options,
    fetch: async (input, init = {}) => {
      const headers = new Headers(init.headers)
      const method = init.method ?? 'GET'
      sent.push({ method, path: new URL(String(input)).pathname, csrf: headers.get('x-csrf-token'), authorization: headers.get('authorization') })
      return Response.json(method === 'GET' ? { object: 'list', data: [], has_more: false, first_id: null, last_id: null } : {})
    },
  })
  return { client, sent }
}

describe('a client on a session cookie', () => {
  test('sends X-CSRF-Token on management calls that change something, and not on reads', async () => {
    const { client, sent } = recordingClient({ csrfToken: 'csrf-1' })

    await client.organization.projects.page()
    await client.organization.projects.create({ name: 'web' })
    await client.organization.projects.update('proj_1', { name: 'web 2' })
    await client.organization.projects.apiKeys('proj_1').revoke('key_1')
    await client.auth.logout()

    expect(sent).toEqual([
      { method: 'GET', path: '/v1/organization/projects', csrf: null, authorization: null },
      { method: 'POST', path: '/v1/organization/projects', csrf: 'csrf-1', authorization: null },
      { method: 'POST', path: '/v1/organization/projects/proj_1', csrf: 'csrf-1', authorization: null },
      { method: 'DELETE', path: '/v1/organization/projects/proj_1/api_keys/key_1', csrf: 'csrf-1', authorization: null },
      { method: 'POST', path: '/v1/auth/logout', csrf: 'csrf-1', authorization: null },
    ])
  })

  test('reads a CSRF token given as a function at the time of each call, and sends none while it gives none', async () => {
    let current: string | null = null
    const { client, sent } = recordingClient({ csrfToken: () => current })

    await client.organization.projects.create({ name: 'before login' })
    current = 'csrf-2'
    await client.organization.projects.create({ name: 'after login' })
    client.csrfToken = 'csrf-3'
    await client.organization.projects.create({ name: 'token replaced' })

    expect(sent.map((request) => request.csrf)).toEqual([null, 'csrf-2', 'csrf-3'])
  })

  test('keeps the CSRF token off inference calls, and sends Authorization only with a credential', async () => {
    const { client, sent } = recordingClient({ csrfToken: 'csrf-4' })

    await client.chat.completions.create({ model: 'nile/m', messages: [{ role: 'user', content: 'hi' }] })
    client.accessToken = 'ngs_token'
    await client.organization.projects.create({ name: 'with a bearer' })

    expect(sent).toEqual([
      { method: 'POST', path: '/v1/chat/completions', csrf: null, authorization: null },
      { method: 'POST', path: '/v1/organization/projects', csrf: 'csrf-4', authorization: 'Bearer ngs_token' },
    ])
  })
})
