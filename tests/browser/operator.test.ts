import { describe, expect, test } from 'bun:test'
import { expectShowsAmount } from './support/amounts'
import { useBrowser } from './support/browser'
import { fetchFromPage, logInThroughPage, openScreen } from './support/dashboard'
import { useDashboardGateway } from './support/gateway'
import { screenshot } from './support/screenshots'

// An operator credits a customer's organization from the operator screens; the customer's
// overview shows the new balance. A double click on the button still credits once.
describe('an operator in the dashboard', () => {
  const gateway = useDashboardGateway()
  const browser = useBrowser()

  test("tops up a customer's organization once, and the customer's balance screen shows it", async () => {
    const tenant = await gateway.current.createDemoTenant(5)
    const operatorAccount = await gateway.current.createOperator()
    const customer = await browser.newContext(gateway.current.origin)
    const customerPage = await customer.newPage()
    await logInThroughPage(customerPage, tenant)
    await openScreen(customerPage, '/')
    await expectShowsAmount(customerPage.getByRole('region', { name: /balance/i }).first(), '5.000000')

    const operator = await browser.newContext(gateway.current.origin)
    const page = await operator.newPage()
    await logInThroughPage(page, operatorAccount)
    await openScreen(page, '/admin/organizations')
    await page.getByRole('searchbox', { name: /search/i }).fill(tenant.organization_id)
    await page.keyboard.press('Enter')
    await page.locator(`a[href="/admin/organizations/${tenant.organization_id}"]`).click()
    await page.waitForURL((url) => url.pathname === `/admin/organizations/${tenant.organization_id}`)
    await page.getByLabel(/amount/i).fill('250')
    await page.getByLabel(/reason|note/i).fill('Bank transfer 2041')
    await page.getByRole('button', { name: /add credit|top up/i }).click()
    // Twice, as an impatient person would: the top-up is still applied once.
    await page.getByRole('dialog').getByRole('button', { name: /confirm|add credit|top up/i }).dblclick()
    await page.getByRole('status').or(page.getByRole('table')).filter({ hasText: /250\.00/ }).first().waitFor()
    await screenshot(page, 'admin-organization-topped-up')

    const balance = await fetchFromPage(customerPage, 'GET', '/v1/organization/balance')
    expect(balance.json.balance_egp).toBe('255.000000')
    await customerPage.reload()
    await expectShowsAmount(customerPage.getByRole('region', { name: /balance/i }).first(), '255.000000')
    const trail = await gateway.current.api('GET', '/organization/audit_logs?limit=100', { token: await gateway.current.logIn(tenant) })
    const credits = (trail.json.data as { type: string }[]).filter((record) => record.type === 'credit.added' && JSON.stringify(record).includes('Bank transfer 2041'))
    expect(credits.length).toBe(1)
    customer.expectNoProblems()
    operator.expectNoProblems()
  }, 110_000)
})
