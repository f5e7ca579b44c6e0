import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ApiKeyCache } from '../../server/core/authenticate'
import { Catalog } from '../../server/core/catalog'
import { InProcessAdmissionStore } from '../../server/adapters/in-process/admission-store'
import { buildApp } from '../../server/http/app'
import { dashboardContentSecurityPolicy } from '../../server/http/routes/web'
import { buildWeb, failedBuildRetryMs, WebBundle, webAssetsPath, webEntry, type Bundler } from '../../server/http/web-bundle'
import { acceptsGzip } from '../../server/http/web-file'
import { dashboardPaths } from '../../web/paths'
import { createTempDir } from '../support/databases'
import { unavailableManagement } from '../support/management-app'
import { demoCatalogPath, testApp } from '../support/test-app'
import { loadCatalogFile } from '../../server/catalog-file'

const models = await loadCatalogFile(demoCatalogPath)

/** The gateway's app serving the dashboard from `web`; no API key works and management is down: only the pages matter here. */
function appWith(web: WebBundle) {
  return buildApp({
    catalog: new Catalog(models),
    providerFor: () => {
      throw new Error('no provider in these tests')
    },
    usage: { record: () => {}, full: false },
    admission: new InProcessAdmissionStore(),
    ledger: { readCounters: async () => Promise.reject(new Error('no ledger in these tests')) },
    log: () => {},
    keys: new ApiKeyCache({ findApiKeyByHash: async () => null }),
    bodyBudgetBytes: 1024 * 1024,
    management: unavailableManagement(),
    web,
  })
}

/** `Bun.build`, counting its calls. */
function countingBundler(): { bundler: Bundler; calls: () => number } {
  let calls = 0
  return {
    bundler: (config) => {
      calls++
      return Bun.build(config)
    },
    calls: () => calls,
  }
}

const get = (app: ReturnType<typeof appWith>, path: string, headers: Record<string, string> = {}, method = 'GET') =>
  app.handle(new Request(`http://localhost${path}`, { method, headers }))

/** The same-origin script and stylesheet URLs a page names. */
function assetsOf(html: string): { scripts: string[]; styles: string[] } {
  return {
    scripts: [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((match) => match[1]!),
    styles: [...html.matchAll(/<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"|<link[^>]*href="([^"]+)"[^>]*rel="stylesheet"/g)].map((match) => (match[1] ?? match[2])!),
  }
}

describe('the dashboard, served by the gateway from web/', () => {
  const counting = countingBundler()
  const web = new WebBundle({ bundler: counting.bundler })
  const app = appWith(web)

  test('is not built until a page is asked for, nor by API requests', async () => {
    await get(app, '/v1/no-such-route')
    await get(app, '/openapi.json')

    expect(counting.calls()).toBe(0)
  })

  test('answers GET / with the page under the strict content security policy, and the page names only its own hashed assets', async () => {
    const page = await get(app, '/')
    const html = await page.text()

    expect({ status: page.status, type: page.headers.get('content-type'), csp: page.headers.get('content-security-policy'), nosniff: page.headers.get('x-content-type-options'), referrer: page.headers.get('referrer-policy'), cache: page.headers.get('cache-control'), requestId: page.headers.get('x-request-id') }).toEqual({
      status: 200,
      type: expect.stringMatching(/^text\/html;\s*charset=utf-8$/),
      csp: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
      nosniff: 'nosniff',
      referrer: 'no-referrer',
      cache: 'no-cache',
      requestId: expect.stringMatching(/^req_/),
    })
    expect(dashboardContentSecurityPolicy).toBe(page.headers.get('content-security-policy')!)
    const { scripts, styles } = assetsOf(html)
    expect(scripts.length).toBeGreaterThan(0)
    for (const url of [...scripts, ...styles]) expect(url).toMatch(/^\/assets\/[\w.-]+-[a-z0-9]{6,}\.(js|css)$/)
    // No inline script or style: the policy would block them.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle="/)
  })

  test('serves the script and stylesheet the page names, with their types, cached for good', async () => {
    const { scripts, styles } = assetsOf(await (await get(app, '/')).text())

    for (const [url, type] of [...scripts.map((url) => [url, /^text\/javascript/] as const), ...styles.map((url) => [url, /^text\/css/] as const)]) {
      const asset = await get(app, url)
      expect({ url, status: asset.status, type: asset.headers.get('content-type'), cache: asset.headers.get('cache-control'), nosniff: asset.headers.get('x-content-type-options') }).toEqual({
        url,
        status: 200,
        type: expect.stringMatching(type),
        cache: 'public, max-age=31536000, immutable',
        nosniff: 'nosniff',
      })
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(0)
    }
  })

  test('sends gzip to clients that take it, the same bytes once unzipped, and the whole file to the others', async () => {
    const [script] = assetsOf(await (await get(app, '/')).text()).scripts

    const plain = await get(app, script!)
    const zipped = await get(app, script!, { 'accept-encoding': 'gzip, deflate, br' })
    const refused = await get(app, script!, { 'accept-encoding': 'gzip;q=0, identity' })

    const plainBytes = new Uint8Array(await plain.arrayBuffer())
    const zippedBytes = new Uint8Array(await zipped.arrayBuffer())
    expect({ plain: plain.headers.get('content-encoding'), zipped: zipped.headers.get('content-encoding'), refused: refused.headers.get('content-encoding'), vary: zipped.headers.get('vary') }).toEqual({ plain: null, zipped: 'gzip', refused: null, vary: 'Accept-Encoding' })
    expect(zippedBytes.byteLength).toBeLessThan(plainBytes.byteLength)
    expect(Bun.gunzipSync(zippedBytes)).toEqual(plainBytes)
    expect(zipped.headers.get('etag')).not.toBe(plain.headers.get('etag'))
  })

  test('answers 304 to a client whose copy is current', async () => {
    const first = await get(app, '/', { 'accept-encoding': 'gzip' })

    const again = await get(app, '/', { 'accept-encoding': 'gzip', 'if-none-match': first.headers.get('etag')! })
    const otherForm = await get(app, '/', { 'if-none-match': first.headers.get('etag')! })

    expect({ again: again.status, body: await again.text(), otherForm: otherForm.status }).toEqual({ again: 304, body: '', otherForm: 200 })
  })

  test('answers HEAD with the headers of GET and no body', async () => {
    const head = await get(app, '/login', { 'accept-encoding': 'gzip' }, 'HEAD')

    expect({ status: head.status, type: head.headers.get('content-type'), csp: head.headers.get('content-security-policy'), encoding: head.headers.get('content-encoding'), body: await head.text() }).toEqual({
      status: 200,
      type: expect.stringMatching(/^text\/html/),
      csp: dashboardContentSecurityPolicy,
      encoding: 'gzip',
      body: '',
    })
  })

  test('answers the page at every path of web/paths.ts, below its prefixes and with a trailing slash', async () => {
    const paths = dashboardPaths.map((path) => (path !== '/' && path.endsWith('/') ? `${path}some_id` : path))
    const page = await (await get(app, '/')).text()

    for (const path of [...paths, '/login/', '/admin/organizations/org_1']) {
      const answer = await get(app, path)
      expect({ path, status: answer.status, same: (await answer.text()) === page }).toEqual({ path, status: 200, same: true })
    }
  })

  test('leaves every other path to the API: 404 or 405 in the error envelope', async () => {
    const answers = await Promise.all([
      get(app, '/v1/no-such-route'),
      get(app, '/assets/index-00000000.js'),
      get(app, '/admin/'),
      get(app, '/no-such-page'),
      get(app, '/login', {}, 'POST'),
      get(app, '/v1/chat/completions'),
    ])

    const seen = await Promise.all(answers.map(async (answer) => ({ status: answer.status, type: answer.headers.get('content-type'), code: ((await answer.json()) as { error: { code: string } }).error.code })))
    const json = expect.stringMatching(/^application\/json/)
    expect(seen).toEqual([
      { status: 404, type: json, code: 'not_found' },
      { status: 404, type: json, code: 'not_found' },
      { status: 404, type: json, code: 'not_found' },
      { status: 404, type: json, code: 'not_found' },
      { status: 405, type: json, code: 'method_not_allowed' },
      { status: 405, type: json, code: 'method_not_allowed' },
    ])
    expect(answers[4]!.headers.get('allow')).toBe('GET, HEAD')
  })

  test('built the dashboard once for all of the above', () => {
    expect({ calls: counting.calls(), builds: web.builds }).toEqual({ calls: 1, builds: 1 })
  })
})

describe('building the dashboard', () => {
  const temp = createTempDir('web-build')
  const page = (script: string) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title><script type="module" src="./${script}"></script></head><body></body></html>`

  beforeAll(async () => {
    await Bun.write(`${temp.path}/split/index.html`, page('main.ts'))
    await Bun.write(`${temp.path}/split/main.ts`, `document.body.append(String(await import('./screen.ts').then((screen) => screen.title)))`)
    await Bun.write(`${temp.path}/split/screen.ts`, `export const title = 'a lazily loaded screen'`)
    await Bun.write(`${temp.path}/broken/index.html`, page('main.ts'))
    await Bun.write(`${temp.path}/broken/main.ts`, `import { missing } from './nowhere.ts'\nconsole.log(missing`)
  })
  afterAll(() => temp.remove())

  test('pulls no server code into the dashboard: it reaches the API through the SDK alone', async () => {
    const output = await Bun.build({ entrypoints: [webEntry], target: 'browser', splitting: true, metafile: true })

    const inputs = Object.keys(output.metafile!.inputs)
    expect(inputs.filter((path) => /node_modules\/(elysia|@sinclair\/typebox|postgres|drizzle-orm|redis|@electric-sql)\//.test(path) || /^(\.\.\/)*server\//.test(path))).toEqual([])
    expect(inputs).toContain('sdk/src/client.ts')
  })

  test('links every stylesheet it writes from the page: a lazily loaded screen cannot bring one of its own', async () => {
    const built = await buildWeb()
    const page = new TextDecoder().decode(built.page.body)
    const stylesheets = [...built.assets.keys()].filter((name) => name.endsWith('.css'))

    expect(stylesheets.length).toBeGreaterThan(0)
    expect(stylesheets.filter((name) => !page.includes(`${webAssetsPath}${name}`))).toEqual([])
  })

  test('puts a screen loaded with import() in its own chunk, served under /assets/', async () => {
    const app = appWith(new WebBundle({ entry: `${temp.path}/split/index.html` }))

    const [entry] = assetsOf(await (await get(app, '/')).text()).scripts
    const entryCode = await (await get(app, entry!)).text()
    const chunk = entryCode.match(/import\(["']([^"']+)["']\)/)?.[1]

    expect(entryCode).not.toContain('a lazily loaded screen')
    expect(chunk).toMatch(/^\/assets\/[\w.-]+-[a-z0-9]{6,}\.js$/)
    expect(await (await get(app, chunk!)).text()).toContain('a lazily loaded screen')
  })

  test('answers 503 when the build fails, logs why, keeps the API up, and tries again only later', async () => {
    let now = 1_000_000
    const logged: unknown[] = []
    const counting = countingBundler()
    const app = appWith(new WebBundle({ entry: `${temp.path}/broken/index.html`, bundler: counting.bundler, log: (message, error) => logged.push(message, error), now: () => now }))

    const [first, second] = await Promise.all([get(app, '/'), get(app, '/keys')])
    const api = await get(app, '/v1/no-such-route')
    const soon = await get(app, '/')
    now += failedBuildRetryMs
    const later = await get(app, '/')

    const body = (await first.json()) as { error: { code: string; message: string } }
    expect({ status: first.status, second: second.status, code: body.error.code, retryAfter: first.headers.get('retry-after') }).toEqual({ status: 503, second: 503, code: 'service_unavailable', retryAfter: '30' })
    expect(body.error.message).toContain('dashboard')
    expect({ api: api.status, soon: soon.status, later: later.status }).toEqual({ api: 404, soon: 503, later: 503 })
    expect(counting.calls()).toBe(2)
    expect(String(logged[0])).toContain('dashboard')
    expect(logged[1]).toBeInstanceOf(AggregateError)
  })
})

describe('the dashboard behind a listening gateway', () => {
  let app: Awaited<ReturnType<typeof testApp>>['app']
  let origin: string

  beforeAll(async () => {
    ;({ app } = await testApp())
    // As main.ts listens: Bun routes requests to each route's handler.
    app.listen({ hostname: '127.0.0.1', port: 0, development: false })
    origin = `http://127.0.0.1:${app.server!.port}`
  })
  afterAll(() => app.stop(true))

  test('answers GET and HEAD of pages and assets over HTTP, gzipped for a client that asks', async () => {
    const page = await fetch(`${origin}/projects/proj_1`, { headers: { 'accept-encoding': 'gzip' }, decompress: false })
    const html = new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(await page.arrayBuffer())))
    const [script] = assetsOf(html).scripts
    const identity = { 'accept-encoding': 'identity' }
    const head = await fetch(`${origin}${script}`, { method: 'HEAD', headers: identity })
    const asset = await fetch(`${origin}${script}`, { headers: identity })

    expect({ status: page.status, encoding: page.headers.get('content-encoding'), csp: page.headers.get('content-security-policy'), html: html.startsWith('<!doctype html>') }).toEqual({ status: 200, encoding: 'gzip', csp: dashboardContentSecurityPolicy, html: true })
    expect({ status: head.status, type: head.headers.get('content-type'), length: Number(head.headers.get('content-length')), body: await head.text() }).toEqual({ status: 200, type: expect.stringMatching(/^text\/javascript/), length: (await asset.arrayBuffer()).byteLength, body: '' })
  })
})

describe('acceptsGzip', () => {
  test('reads Accept-Encoding as RFC 9110 writes it', () => {
    expect([null, '', 'gzip', 'GZIP', 'br, gzip;q=0.5', 'gzip;q=0', 'gzip; q=0.000', '*', '*;q=0', 'br', 'br, *;q=0.1', '*, gzip;q=0'].map(acceptsGzip)).toEqual([false, false, true, true, true, false, false, true, false, false, true, false])
  })
})
