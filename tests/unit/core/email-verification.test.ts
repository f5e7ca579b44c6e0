import { describe, expect, test } from 'bun:test'
import { verificationMail } from '../../../server/core/governance/email-verification'

describe('verificationMail', () => {
  test('shows the whole request under PUBLIC_BASE_URL', () => {
    const mail = verificationMail('ada@example.test', 'ngv_abc', 'https://api.example.com/v1/')

    expect(mail.to).toBe('ada@example.test')
    expect(mail.text).toContain(`curl -X POST https://api.example.com/v1/auth/verify_email -H 'Content-Type: application/json' -d '{"token":"ngv_abc"}'`)
  })

  test('without a base URL it names the route and the token only', () => {
    const mail = verificationMail('ada@example.test', 'ngv_abc', null)

    expect(mail.text).toContain('POST /v1/auth/verify_email with the body {"token":"ngv_abc"}')
    expect(mail.text).not.toContain('http')
  })
})
