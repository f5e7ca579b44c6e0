import { describe, expect, test } from 'bun:test'
import { useBrowser } from './support/browser'
import { logInThroughPage, openScreen } from './support/dashboard'
import { useDashboardGateway } from './support/gateway'
import { screenshot } from './support/screenshots'

// Passwords in the dashboard: a forgotten one is reset from the mailed link (the token in the
// fragment, never sent as a query), and a changed one ends the account's other sessions.
describe('passwords in the dashboard', () => {
  const gateway = useDashboardGateway()
  const browser = useBrowser()

  test('a forgotten password is reset from the mailed link, and only the new one logs in', async () => {
    const account = await gateway.current.createVerifiedAccount('forgetful')
    const person = await browser.newContext(gateway.current.origin)
    const page = await person.newPage()

    await openScreen(page, '/forgot-password')
    await page.getByLabel(/^e-?mail/i).fill(account.email)
    await page.getByRole('button', { name: /send|reset|mail/i }).click()
    await page.getByText(/check your (e-?)?mail/i).first().waitFor()
    const link = await gateway.current.mailedLink(account.email, 'reset-password')
    expect(link).toStartWith(`${gateway.current.origin}/reset-password#token=`)
    await page.goto(link)
    await page.getByLabel(/^new password$/i).fill('a brand new passphrase')
    await page.getByLabel(/^new password again$/i).fill('a brand new passphrase')
    await page.getByRole('button', { name: /set|change|save|reset/i }).click()
    await page.getByText(/password is changed/i).first().waitFor()
    await screenshot(page, 'reset-password-done')

    expect(new URL(page.url()).hash).toBe('')
    const old = await gateway.current.api('POST', '/auth/login', { body: account })
    expect(old.status).toBe(401)
    await logInThroughPage(page, { email: account.email, password: 'a brand new passphrase' })
    person.expectNoProblems()
  }, 60_000)

  test('changing the password on /account ends the other sessions, not this one', async () => {
    const account = await gateway.current.createVerifiedAccount('careful')
    const laptop = await browser.newContext(gateway.current.origin)
    const phone = await browser.newContext(gateway.current.origin)
    const left = await laptop.newPage()
    const right = await phone.newPage()
    await logInThroughPage(left, account)
    await logInThroughPage(right, account)

    await openScreen(right, '/account')
    const form = right.getByRole('form', { name: /change your password/i })
    await form.getByLabel(/^current password$/i).fill(account.password)
    await form.getByLabel(/^new password$/i).fill('another long passphrase')
    await form.getByLabel(/^new password again$/i).fill('another long passphrase')
    await form.getByRole('button', { name: /change password/i }).click()
    await right.getByText(/password is changed/i).first().waitFor()

    await left.goto('/account')
    await left.waitForURL((url) => url.pathname === '/login')
    await openScreen(right, '/account')
    expect(new URL(right.url()).pathname).toBe('/account')
    laptop.expectNoProblems()
    phone.expectNoProblems()
  }, 60_000)
})
