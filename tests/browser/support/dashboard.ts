import type { Locator, Page } from 'playwright-core'
import type { ApiAnswer, TestAccount } from './gateway'

/** Logs in through /login, as a person would, and waits to have left it. */
export async function logInThroughPage(page: Page, account: TestAccount, path = '/login'): Promise<void> {
  await page.goto(path)
  await page.getByLabel(/^e-?mail/i).fill(account.email)
  await page.getByLabel(/^password$/i).fill(account.password)
  await page.getByRole('button', { name: /^(log in|sign in)$/i }).click()
  await page.waitForURL((url) => url.pathname !== '/login')
}

/** Opens a dashboard page and waits for its heading and for its requests to settle. */
export async function openScreen(page: Page, path: string, heading?: RegExp): Promise<void> {
  await page.goto(path)
  await page.getByRole('heading', { level: 1, name: heading }).waitFor()
  await page.waitForLoadState('networkidle')
}

/**
 * Calls the API from inside the page, as the dashboard's own code would: same origin, with the
 * session cookie the browser holds and nothing else unless `headers` says so.
 */
export async function fetchFromPage(page: Page, method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<ApiAnswer> {
  return page.evaluate(
    async ({ method, path, body, headers }) => {
      const response = await fetch(path, { method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, body: body === undefined ? undefined : JSON.stringify(body) })
      const text = await response.text()
      return { status: response.status, json: text ? JSON.parse(text) : null }
    },
    { method, path, body: options.body, headers: options.headers ?? {} },
  )
}

/** The CSRF token of the page's cookie session, as a reloaded dashboard gets it (GET /v1/auth/me). */
export async function csrfTokenOf(page: Page): Promise<string> {
  const me = await fetchFromPage(page, 'GET', '/v1/auth/me')
  if (typeof me.json?.csrf_token !== 'string') throw new Error(`GET /v1/auth/me with the cookie gave no csrf_token: ${me.status} ${JSON.stringify(me.json)}`)
  return me.json.csrf_token
}

/** Logs out through the dashboard: the "Log out" control, opening the user menu first when it hides there. */
export async function logOutThroughPage(page: Page): Promise<void> {
  const logOut = page.getByRole('button', { name: /^(log ?out|sign out)$/i }).or(page.getByRole('menuitem', { name: /^(log ?out|sign out)$/i }))
  if (!(await logOut.first().isVisible())) await page.getByRole('button', { name: /account|user menu|@/i }).first().click()
  await logOut.first().click()
  await page.waitForURL((url) => url.pathname === '/login')
}

/**
 * After a destructive click: confirms in the dialog when the screen asks (clicking its button named
 * `confirm`), then waits for `gone` to leave the page.
 */
export async function confirmIfAsked(page: Page, confirm: RegExp, gone: Locator): Promise<void> {
  const button = page.getByRole('dialog').getByRole('button', { name: confirm })
  const asked = button.waitFor().then(
    () => button.click(),
    () => {},
  )
  await Promise.race([asked, gone.waitFor({ state: 'detached' })])
  await gone.waitFor({ state: 'detached' })
}
