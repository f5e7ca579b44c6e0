import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { chatModel } from '../support/test-app'
import { expectNoSeriousA11yViolations } from './support/accessibility'
import { openContext, useBrowser, type WatchedContext } from './support/browser'
import { logInThroughPage, openScreen } from './support/dashboard'
import { useDashboardGateway } from './support/gateway'
import { screenshot } from './support/screenshots'

const arabicProject = 'مساعد خدمة العملاء'
const arabicKey = 'مفتاح الدعم'

interface Screen {
  name: string
  path: string | (() => string)
  /** What shows that the screen has its data, beyond its heading. */
  ready?: (page: Page) => Promise<unknown>
}

// Every main screen, with data in it, checked by axe (no serious or critical violation) and
// photographed into tests/browser/screenshots/. The signed-in person owns an organization with an
// Arabic-named project and is also a platform operator, so one session reaches every screen.
describe('the dashboard screens', () => {
  const gateway = useDashboardGateway()
  const browser = useBrowser()
  let person: WatchedContext
  let page: Page
  let projectId = ''

  beforeAll(async () => {
    const tenant = await gateway.current.createDemoTenant(50)
    await gateway.current.cli(['operator', 'grant', '--email', tenant.email])
    const token = await gateway.current.logIn(tenant)
    const project = await gateway.current.api('POST', '/organization/projects', { token, body: { name: arabicProject } })
    projectId = project.json.id
    const key = await gateway.current.api('POST', `/organization/projects/${projectId}/api_keys`, { token, body: { name: arabicKey, rpm_limit: 60 } })
    for (const content of ['مرحبا', 'Hello']) {
      const reply = await fetch(`${gateway.current.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.json.value}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: chatModel, messages: [{ role: 'user', content }] }),
      })
      if (reply.status !== 200) throw new Error(`the chat completion answered ${reply.status}: ${await reply.text()}`)
    }
    person = await openContext(browser.current, gateway.current.origin)
    page = await person.newPage()
    await logInThroughPage(page, tenant)
  }, 90_000)
  afterAll(async () => {
    await person?.close()
  })

  const table = (page: Page) => page.getByRole('table').first().getByRole('row').nth(1).waitFor()
  const screens: Screen[] = [
    { name: 'overview', path: '/', ready: (page) => page.getByRole('region', { name: /balance/i }).first().waitFor() },
    { name: 'projects', path: '/projects', ready: (page) => page.getByRole('link', { name: arabicProject }).waitFor() },
    { name: 'project', path: () => `/projects/${projectId}`, ready: (page) => page.getByRole('row').filter({ hasText: arabicKey }).first().waitFor() },
    { name: 'keys', path: '/keys', ready: table },
    { name: 'usage', path: '/usage', ready: table },
    { name: 'audit', path: '/audit', ready: table },
    { name: 'members', path: '/members', ready: table },
    { name: 'models', path: '/models', ready: (page) => page.getByText(chatModel).first().waitFor() },
    { name: 'model', path: `/models/${chatModel}`, ready: (page) => page.getByText(/context/i).first().waitFor() },
    { name: 'playground', path: '/playground', ready: (page) => page.getByRole('button', { name: /^send$/i }).waitFor() },
    { name: 'account', path: '/account', ready: table },
    { name: 'new-organization', path: '/organizations/new' },
    { name: 'admin-organizations', path: '/admin/organizations', ready: table },
    { name: 'admin-users', path: '/admin/users', ready: table },
    { name: 'admin-models', path: '/admin/models', ready: table },
    { name: 'admin-deployments', path: '/admin/deployments', ready: table },
  ]

  for (const screen of screens) {
    test(`${screen.name}: no serious accessibility violation`, async () => {
      await openScreen(page, typeof screen.path === 'function' ? screen.path() : screen.path)
      await screen.ready?.(page)
      await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' })

      await screenshot(page, screen.name)
      await expectNoSeriousA11yViolations(page, screen.name)
      person.expectNoProblems()
    }, 30_000)
  }

  test('login and sign-up, signed out: no serious accessibility violation', async () => {
    const stranger = await browser.newContext(gateway.current.origin)
    const signedOut = await stranger.newPage()
    for (const [name, path] of [['login', '/login'], ['signup', '/signup'], ['forgot-password', '/forgot-password']] as const) {
      await openScreen(signedOut, path)
      await screenshot(signedOut, name)
      await expectNoSeriousA11yViolations(signedOut, name)
    }
    stranger.expectNoProblems()
  }, 30_000)

  test('Arabic names render right to left wherever they appear', async () => {
    // Options of a <select> are drawn by the platform's own widget; every other element counts.
    const directions = (page: Page, text: string) =>
      page.getByText(text, { exact: true }).evaluateAll((elements) => elements.filter((element) => element.tagName !== 'OPTION').map((element) => getComputedStyle(element).direction))
    const seen: Record<string, string[]> = {}

    for (const path of ['/', '/projects', `/projects/${projectId}`, '/keys']) {
      await openScreen(page, path)
      await page.getByText(arabicProject, { exact: true }).first().waitFor()
      seen[path] = [...(await directions(page, arabicProject)), ...(await directions(page, arabicKey))]
    }

    for (const [path, found] of Object.entries(seen)) expect({ path, found: found.filter((direction) => direction !== 'rtl') }).toEqual({ path, found: [] })
    expect(seen[`/projects/${projectId}`]!.length).toBeGreaterThanOrEqual(2)
    person.expectNoProblems()
  }, 30_000)

  test('the overview fits a 375 px phone', async () => {
    const phone = await browser.newContext(gateway.current.origin, { viewport: { width: 375, height: 812 } })
    await phone.context.addCookies(await person.context.cookies())
    const small = await phone.newPage()

    await openScreen(small, '/')
    await small.getByRole('region', { name: /balance/i }).first().waitFor()

    await screenshot(small, 'overview-phone')
    expect(await small.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    phone.expectNoProblems()
  }, 30_000)
})
