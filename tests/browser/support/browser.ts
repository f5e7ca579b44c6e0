import { afterAll, afterEach, beforeAll } from 'bun:test'
import { existsSync } from 'node:fs'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'

/** Debian's chromium; CHROMIUM_PATH points elsewhere. */
export const chromiumPath = Bun.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

// An API answer of 4xx is part of a screen's flow (a wrong password, a refused CSRF probe); the
// screen shows its message. Chromium still logs it as a console error, which is not the page's.
const expectedNetworkLog = /^Failed to load resource: the server responded with a status of 4\d\d\b/

/** The file's browser, and the contexts its tests open (closed after each test). */
export interface TestBrowser {
  readonly current: Browser
  /** A watched context of one person on `origin` (see `openContext`); closed after the test, failing it if problems went unreported. */
  newContext(origin: string, options?: ContextOptions): Promise<WatchedContext>
}

/**
 * Launches one headless chromium for the enclosing file (beforeAll) and closes it afterwards. A
 * machine without chromium fails the file with how to install it: CI installs it, so a missing
 * browser is a broken setup, not a reason to skip.
 */
export function useBrowser(): TestBrowser {
  let browser: Browser | undefined
  const open = new Set<WatchedContext>()
  beforeAll(async () => {
    if (!existsSync(chromiumPath)) {
      throw new Error(`The browser tests need Chromium at ${chromiumPath}. Install Debian's package (apt-get install -y chromium), run .ci/run (which does), or set CHROMIUM_PATH.`)
    }
    // Playwright passes --no-sandbox itself (chromiumSandbox defaults to false), which running as root in a container needs.
    browser = await chromium.launch({ executablePath: chromiumPath, timeout: 30_000 })
  }, 60_000)
  // A test that failed halfway still says what its pages ran into, which usually explains it.
  afterEach(async () => {
    const unreported = [...open].flatMap((context) => context.problems)
    await Promise.all([...open].map((context) => context.close()))
    open.clear()
    if (unreported.length > 0) throw new Error(`the pages had problems:\n- ${unreported.join('\n- ')}`)
  })
  afterAll(async () => {
    await browser?.close()
  }, 30_000)
  const current = (): Browser => {
    if (!browser) throw new Error('chromium has not started (see the beforeAll failure above)')
    return browser
  }
  return {
    get current() {
      return current()
    },
    async newContext(origin, options) {
      const context = await openContext(current(), origin, options)
      open.add(context)
      return context
    },
  }
}

/** A browser context of one person (its own cookies), watching every page it opens for problems. */
export interface WatchedContext {
  readonly context: BrowserContext
  /** Opens a new page (tab) of this person, watched like the others. */
  newPage(): Promise<Page>
  /** What went wrong in any of its pages so far: uncaught errors, console errors, CSP violations, 5xx answers, requests leaving the gateway. */
  readonly problems: readonly string[]
  /** Throws with every problem seen so far, then forgets them. */
  expectNoProblems(): void
  close(): Promise<void>
}

export interface ContextOptions {
  /** Defaults to a desktop 1280 x 800. */
  viewport?: { width: number; height: number }
  locale?: string
}

/**
 * A new context whose pages may reach only `origin`: every other request is aborted and counted
 * as a problem, which proves the dashboard needs no internet. Console errors, uncaught exceptions,
 * Content-Security-Policy violations and 5xx answers are collected for `expectNoProblems()`.
 */
export async function openContext(browser: Browser, origin: string, options: ContextOptions = {}): Promise<WatchedContext> {
  const context = await browser.newContext({
    baseURL: origin,
    viewport: options.viewport ?? { width: 1280, height: 800 },
    locale: options.locale ?? 'en-US',
    permissions: ['clipboard-read', 'clipboard-write'],
  })
  // Roomy for a machine running other suites at once; a step that waits this long has failed anyway.
  context.setDefaultTimeout(15_000)
  const problems: string[] = []
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url())
    if (url.origin === origin || url.protocol === 'data:' || url.protocol === 'blob:') return route.continue()
    problems.push(`a request left the gateway: ${route.request().method()} ${url.href}`)
    return route.abort('blockedbyclient')
  })
  // Init scripts are added over the DevTools protocol, which the page's CSP does not govern.
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || 'an inline resource'} in ${event.sourceFile || event.documentURI}:${event.lineNumber}`)
    })
  })
  const watch = (page: Page) => {
    page.on('pageerror', (error) => problems.push(`uncaught on ${page.url()}: ${error.stack ?? error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error' && !expectedNetworkLog.test(message.text())) problems.push(`console error on ${page.url()}: ${message.text()}`)
    })
    page.on('response', (response) => {
      if (response.status() >= 500) problems.push(`${response.status()} from ${response.request().method()} ${response.url()}`)
    })
  }
  context.on('page', watch)
  return {
    context,
    newPage: () => context.newPage(),
    get problems() {
      return problems
    },
    expectNoProblems() {
      const seen = problems.splice(0)
      if (seen.length > 0) throw new Error(`the pages had problems:\n- ${seen.join('\n- ')}`)
    },
    close: () => context.close(),
  }
}
