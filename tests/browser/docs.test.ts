import { describe, expect, test } from 'bun:test'
import { useBrowser } from './support/browser'
import { useDashboardGateway } from './support/gateway'
import { screenshot } from './support/screenshots'

// GET /docs renders the API reference from the gateway alone: every request that would leave it
// (a CDN, a validator badge, a font) is blocked and fails the test. axe is left to the dashboard's
// own screens: the reference's markup is Swagger UI's.
describe('the API reference at /docs', () => {
  const gateway = useDashboardGateway()
  const browser = useBrowser()

  test('renders our operations with no internet, under its CSP', async () => {
    const person = await browser.newContext(gateway.current.origin)
    const page = await person.newPage()

    const response = await page.goto('/docs')
    const operation = page.getByRole('button', { name: /^POST\s*\/v1\/chat\/completions\b/ })
    await operation.waitFor()

    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'")
    await expect(page.getByRole('heading', { name: /nilegate/i }).first().isVisible()).resolves.toBe(true)
    for (const path of ['/v1/embeddings', '/v1/organization/projects', '/v1/admin/organizations/{id}/credits']) {
      expect(await page.getByRole('button', { name: new RegExp(`^(GET|POST)\\s*${path.replace(/[{}/]/g, '\\$&')}(\\s|$)`) }).count()).toBeGreaterThan(0)
    }
    await operation.click()
    await page.getByText('Request body').first().waitFor()
    await page.getByText('invalid_request').first().waitFor()
    await screenshot(page, 'docs', { fullPage: false })
    person.expectNoProblems()
  }, 60_000)
})
