import { describe, expect, test } from 'bun:test'
import { randomBase62 } from '../../../server/core/api-keys'
import { verificationMail } from '../../../server/core/governance/email-verification'
import { passwordResetMail } from '../../../server/core/governance/password-reset'
import { mailBaseUrl } from '../../../server/http/management'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'

describe('the links of mails', () => {
  test('point at dashboard pages under PUBLIC_BASE_URL without its /v1, the token in the fragment, and keep the API request', () => {
    const verification = verificationMail('ada@example.test', 'ngv_abc', 'https://gw.example.eg/v1/')
    const reset = passwordResetMail('ada@example.test', 'ngr_abc', 'https://gw.example.eg/v1')

    expect(verification.text).toContain('https://gw.example.eg/verify-email#token=ngv_abc')
    expect(verification.text).toContain(`curl -X POST https://gw.example.eg/v1/auth/verify_email -H 'Content-Type: application/json' -d '{"token":"ngv_abc"}'`)
    expect(reset.text).toContain('https://gw.example.eg/reset-password#token=ngr_abc')
    expect(reset.text).toContain('curl -X POST https://gw.example.eg/v1/auth/password_reset/confirm')
    expect(reset.text).not.toContain('?token=')
  })

  test('are under PUBLIC_BASE_URL, else the address the gateway listens on (an unspecified one as localhost), else absent', () => {
    const listening = (url: string) => ({ url: new URL(url) })

    expect(mailBaseUrl({ publicBaseUrl: 'https://gw.example.eg/v1' }, listening('http://127.0.0.1:8080/'))).toBe('https://gw.example.eg/v1')
    expect(mailBaseUrl({ publicBaseUrl: null }, listening('http://127.0.0.1:8080/'))).toBe('http://127.0.0.1:8080/v1')
    expect(mailBaseUrl({}, listening('http://0.0.0.0:8080/'))).toBe('http://localhost:8080/v1')
    expect(mailBaseUrl({}, listening('http://[::]:8080/'))).toBe('http://localhost:8080/v1')
    expect(mailBaseUrl({}, listening('http://[::1]:8080/'))).toBe('http://[::1]:8080/v1')
    expect(mailBaseUrl({}, null)).toBeNull()
  })
})

describeEachDatabase('mails of a gateway without PUBLIC_BASE_URL', (context) => {
  test('link to the address it listens on, whatever Host the request named', async () => {
    const gateway = await managementApp(context.current.db)
    const server = gateway.listen()
    try {
      const owner = await gateway.signUp()
      const orgId = await gateway.createOrganization(owner)
      const email = `new-${randomBase62(8).toLowerCase()}@example.test`
      const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
        fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', host: 'evil.example', ...headers }, body: JSON.stringify(body) })

      expect((await post('/v1/auth/signup', { email, password: 'a long enough password' })).status).toBe(201)
      expect((await post('/v1/organization/invites', { email, role: 'member' }, { authorization: `Bearer ${owner.token}`, 'openai-organization': orgId })).status).toBe(201)

      const [verification, invitation] = [gateway.mail.find((message) => message.subject.startsWith('Verify')), gateway.mail.find((message) => message.subject.startsWith('You are invited'))]
      expect(verification?.text).toContain(`${server.url}/verify-email#token=${verification?.secrets[0]}`)
      expect(invitation?.text).toContain(`${server.url}/invite#token=${invitation?.secrets[0]}`)
      expect(invitation?.text).toContain(`curl -X POST ${server.url}/v1/invites/accept -H 'Authorization: Bearer <your access token>'`)
      expect(gateway.mail.some((message) => message.text.includes('evil.example'))).toBe(false)
    } finally {
      server.stop()
    }
  })
})
