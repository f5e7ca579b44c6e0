import { afterAll, expect, test } from 'bun:test'
import { startFakeSmtp } from '../support/fake-smtp'
import { useGateway } from '../support/gateway-process'
import { waitFor } from '../support/wait-for'

// A gateway started with SMTP_URL sends its mail over SMTP, with the client it loads only then.
const smtp = startFakeSmtp()
afterAll(() => smtp.stop())
const running = useGateway({ database: 'pglite', env: { SMTP_URL: smtp.url, MAIL_FROM: 'nilegate <no-reply@nilegate.test>' } })

test('a signup on a gateway with SMTP_URL gets its verification mail over SMTP, not printed', async () => {
  const email = `smtp-${Date.now()}@example.test`
  const response = await fetch(`${running.current.baseUrl}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'a long enough passphrase' }),
  })
  expect(response.status).toBe(201)
  await waitFor(() => smtp.received.some((mail) => mail.to.includes(email)), { timeoutMs: 10_000, what: 'the mail over SMTP' })
  const mail = smtp.received.find((received) => received.to.includes(email))!
  expect(mail.from).toBe('no-reply@nilegate.test')
  expect(mail.data).toMatch(/ngv_[A-Za-z0-9]{48}/)
  expect(running.current.output()).not.toContain(`mail to ${email}`)
})
