import { mkdirSync } from 'node:fs'
import type { Page } from 'playwright-core'

/** Where the browser tests leave their screenshots (git-ignored). */
export const screenshotDir = new URL('../screenshots/', import.meta.url).pathname

/** Writes the page (the whole of it, or what the window shows) as tests/browser/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string, { fullPage = true } = {}): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true })
  // A sticky top bar is drawn where the window last scrolled to; from the top it stays on top.
  if (fullPage) await page.evaluate(() => window.scrollTo(0, 0))
  await page.screenshot({ path: `${screenshotDir}${name}.png`, fullPage, animations: 'disabled' })
}
