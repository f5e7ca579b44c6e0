import { describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { useBrowser } from './support/browser'
import { csrfTokenOf, fetchFromPage, logInThroughPage, openScreen } from './support/dashboard'
import { useDashboardGateway } from './support/gateway'
import { screenshot } from './support/screenshots'

// What a role may not do is not offered: a reader finds read-only screens, not buttons that fail,
// and the API refuses the same action when the reader sends it anyway.
describe('a reader in the dashboard', () => {
  const gateway = useDashboardGateway()
  const browser = useBrowser()

  /** Every button on the page whose name offers a change, which a reader must not be shown. */
  async function writeButtons(page: Page): Promise<string[]> {
    const names = await page.getByRole('button').evaluateAll((buttons) => buttons.map((button) => (button.getAttribute('aria-label') ?? button.textContent ?? '').trim()))
    return names.filter((name) => /\b(new|create|invite|revoke|archive|save|edit|remove|delete|change role|suspend)\b/i.test(name))
  }

  test('is invited by the owner, accepts, sees no write actions, and the API refuses them', async () => {
    const tenant = await gateway.current.createDemoTenant()
    const readerAccount = await gateway.current.createVerifiedAccount('reader')
    const ownerToken = await gateway.current.logIn(tenant)
    const project = (await gateway.current.api('GET', `/organization/projects/${tenant.project_id}`, { token: ownerToken })).json as { id: string; name: string }
    const owner = await browser.newContext(gateway.current.origin)
    const ownerPage = await owner.newPage()
    await logInThroughPage(ownerPage, tenant)

    await openScreen(ownerPage, '/members')
    const invite = ownerPage.getByRole('form', { name: /invite/i })
    await invite.getByLabel(/e-?mail/i).fill(readerAccount.email)
    await invite.getByLabel(/^role$/i).selectOption('reader')
    await invite.getByRole('button', { name: /^(send )?invit(e|ation)|^send/i }).click()
    await ownerPage.getByRole('row').filter({ hasText: readerAccount.email }).first().waitFor()

    const reader = await browser.newContext(gateway.current.origin)
    const page = await reader.newPage()
    await logInThroughPage(page, readerAccount)
    await page.goto(await gateway.current.mailedLink(readerAccount.email, 'invite'))
    await page.getByRole('button', { name: /accept/i }).click()
    await page.getByText(/you (have )?joined|you are (now )?a (member|reader)/i).first().waitFor()

    await openScreen(page, '/projects')
    await page.getByRole('link', { name: project.name }).waitFor()
    expect(await writeButtons(page)).toEqual([])
    await page.getByRole('link', { name: project.name }).click()
    await page.getByRole('heading', { level: 1, name: project.name }).waitFor()
    await page.getByRole('row').filter({ hasText: /sk-/ }).first().waitFor()
    await page.waitForLoadState('networkidle')
    expect(await writeButtons(page)).toEqual([])
    const editable = 'input:is(:not([type]), [type=text], [type=number], [type=email], [type=url], [type=date], [type=datetime-local]):not([disabled]):not([readonly]), textarea:not([disabled]):not([readonly])'
    expect(await page.locator(editable).count()).toBe(0)
    await screenshot(page, 'project-as-reader')
    for (const path of ['/members', '/keys']) {
      await openScreen(page, path)
      await page.getByRole('table').first().waitFor()
      expect({ path, buttons: await writeButtons(page) }).toEqual({ path, buttons: [] })
    }
    expect(await page.getByRole('navigation').getByRole('link', { name: /audit/i }).count()).toBe(0)

    const headers = { 'x-csrf-token': await csrfTokenOf(page), 'openai-organization': tenant.organization_id }
    const key = await fetchFromPage(page, 'POST', `/v1/organization/projects/${project.id}/api_keys`, { headers, body: { name: 'not allowed' } })
    const projectCreated = await fetchFromPage(page, 'POST', '/v1/organization/projects', { headers, body: { name: 'not allowed' } })
    const read = await fetchFromPage(page, 'GET', `/v1/organization/projects/${project.id}/api_keys`, { headers: { 'openai-organization': tenant.organization_id } })
    expect([key.status, key.json.error?.code, projectCreated.status, projectCreated.json.error?.code, read.status]).toEqual([403, 'permission_denied', 403, 'permission_denied', 200])
    owner.expectNoProblems()
    reader.expectNoProblems()
  }, 110_000)
})
