import { mkdirSync } from 'node:fs'
import type { Page } from 'playwright-core'

/** Where the browser tests leave their screenshots (git-ignored). */
export const screenshotDir = new URL('../screenshots/', import.meta.url).pathname

/** Writes the whole page as tests/browser/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true })
  await page.screenshot({ path: `${screenshotDir}${name}.png`, fullPage: true, animations: 'disabled' })
}
