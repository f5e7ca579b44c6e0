import { describe, expect, test } from 'bun:test'
import { useBrowser } from './support/browser'
import { confirmIfAsked, csrfTokenOf, fetchFromPage, logInThroughPage, logOutThroughPage, openScreen } from './support/dashboard'
import { useDashboardGateway, type TestAccount } from './support/gateway'

// The dashboard's session is a cookie that page scripts cannot read; where a cookie authenticates,
// a changing call needs the CSRF header too; a session that ends sends every tab back to /login.
describe('the dashboard session', () => {
  const gateway = useDashboardGateway()
  const browser = useBrowser()

  async function tenantAccount(): Promise<TestAccount> {
    const tenant = await gateway.current.createDemoTenant()
    return { email: tenant.email, password: tenant.password }
  }

  test('is an httpOnly, SameSite=Strict cookie that no script or storage of the page holds', async () => {
    const person = await browser.newContext(gateway.current.origin)
    const page = await person.newPage()

    await logInThroughPage(page, await tenantAccount())

    const session = (await person.context.cookies()).find((cookie) => cookie.name === 'nilegate_session')
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/v1', secure: false })
    const visible = await page.evaluate(() => ({ cookie: document.cookie, local: JSON.stringify({ ...localStorage }), session: JSON.stringify({ ...sessionStorage }) }))
    for (const place of Object.values(visible)) {
      expect(place).not.toContain(session!.value)
      expect(place).not.toMatch(/ngs_[A-Za-z0-9]/)
    }
    expect(visible.cookie).not.toContain('nilegate_session')
    person.expectNoProblems()
  }, 60_000)

  test('refuses a changing call that carries the cookie without the X-CSRF-Token header', async () => {
    const person = await browser.newContext(gateway.current.origin)
    const page = await person.newPage()
    await logInThroughPage(page, await tenantAccount())

    const without = await fetchFromPage(page, 'POST', '/v1/organization/projects', { body: { name: 'forged' } })
    const wrong = await fetchFromPage(page, 'POST', '/v1/organization/projects', { body: { name: 'forged' }, headers: { 'x-csrf-token': 'not-the-token' } })
    const right = await fetchFromPage(page, 'POST', '/v1/organization/projects', { body: { name: 'made here' }, headers: { 'x-csrf-token': await csrfTokenOf(page) } })

    for (const refused of [without, wrong]) {
      expect([refused.status, refused.json.error.code]).toEqual([403, 'permission_denied'])
      expect(refused.json.error.message).toContain('X-CSRF-Token')
    }
    expect(right.status).toBe(201)
    const projects = await fetchFromPage(page, 'GET', '/v1/organization/projects?limit=100')
    expect((projects.json.data as { name: string }[]).map((project) => project.name)).not.toContain('forged')
    person.expectNoProblems()
  }, 60_000)

  test('logging out clears the cookie and bounces to /login, where a signed-in page now sends you', async () => {
    const person = await browser.newContext(gateway.current.origin)
    const page = await person.newPage()
    await logInThroughPage(page, await tenantAccount())
    await openScreen(page, '/projects')

    await logOutThroughPage(page)

    expect((await person.context.cookies()).map((cookie) => cookie.name)).not.toContain('nilegate_session')
    await page.goto('/projects')
    await page.waitForURL((url) => url.pathname === '/login')
    expect(new URL(page.url()).searchParams.get('next')).toBe('/projects')
    person.expectNoProblems()
  }, 60_000)

  test('a tab whose session was logged out in another tab goes to /login on its next step', async () => {
    const person = await browser.newContext(gateway.current.origin)
    const first = await person.newPage()
    await logInThroughPage(first, await tenantAccount())
    await openScreen(first, '/')
    const second = await person.newPage()
    await openScreen(second, '/account')

    await logOutThroughPage(second)
    await first.getByRole('navigation').getByRole('link', { name: /^projects$/i }).first().click()

    await first.waitForURL((url) => url.pathname === '/login')
    person.expectNoProblems()
  }, 60_000)

  test('a session ended from another browser on /account goes to /login on its next step', async () => {
    const account = await tenantAccount()
    const laptop = await browser.newContext(gateway.current.origin)
    const phone = await browser.newContext(gateway.current.origin)
    const left = await laptop.newPage()
    const right = await phone.newPage()
    await logInThroughPage(left, account)
    await openScreen(left, '/')
    await logInThroughPage(right, account)

    await openScreen(right, '/account')
    await right.getByRole('row').filter({ hasText: /current|this (session|device|browser)/i }).waitFor()
    const otherSessions = right.getByRole('row').filter({ has: right.getByRole('button', { name: /end|revoke|sign out|log out/i }) }).filter({ hasNotText: /current|this (session|device|browser)/i })
    expect(await otherSessions.count()).toBe(1)
    await otherSessions.getByRole('button', { name: /end|revoke|sign out|log out/i }).click()
    await confirmIfAsked(right, /end|revoke|sign out|log out/i, otherSessions.first())
    await left.getByRole('navigation').getByRole('link', { name: /^projects$/i }).first().click()

    await left.waitForURL((url) => url.pathname === '/login')
    expect(right.url()).not.toContain('/login')
    laptop.expectNoProblems()
    phone.expectNoProblems()
  }, 60_000)
})
