import { beforeAll, describe, expect, test } from 'bun:test'
import { docsContentSecurityPolicy } from '../../server/http/openapi'
import { testApp } from '../support/test-app'

type App = Awaited<ReturnType<typeof testApp>>['app']

const get = (app: App, path: string, headers: Record<string, string> = {}) => app.handle(new Request(`http://localhost${path}`, { headers }))

/** Every URL a page names in src and href attributes. */
const urlsOf = (html: string) => [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((match) => match[1]!)

/** What start.js hands Swagger UI when the page is at `pathname`. */
function startedWith(script: string, pathname: string): Record<string, unknown> {
  let config: Record<string, unknown> = {}
  const SwaggerUIBundle = Object.assign((options: Record<string, unknown>) => (config = options), { presets: { apis: 'apis-preset' } })
  new Function('SwaggerUIBundle', 'location', 'window', script)(SwaggerUIBundle, { pathname }, {})
  return config
}

describe('GET /docs with no internet', () => {
  let app: App
  let html: string
  let page: Response

  beforeAll(async () => {
    ;({ app } = await testApp())
    page = await get(app, '/docs')
    html = await page.text()
  })

  test('names no address off the gateway and no inline script or style, under a strict policy', () => {
    const urls = urlsOf(html)

    expect({ status: page.status, csp: page.headers.get('content-security-policy'), nosniff: page.headers.get('x-content-type-options') }).toEqual({ status: 200, csp: docsContentSecurityPolicy, nosniff: 'nosniff' })
    expect(docsContentSecurityPolicy).toMatch(/default-src 'none'; script-src 'self'; style-src 'self';/)
    expect(urls.length).toBeGreaterThanOrEqual(3)
    expect(urls.filter((url) => !/^\/(?!\/)/.test(url) && !url.startsWith('data:'))).toEqual([])
    expect(html).not.toMatch(/https?:\/\/|<style\b|\sstyle="/)
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
  })

  test('serves every script and stylesheet the page names, with its type, gzipped for clients that take it', async () => {
    const assets = urlsOf(html).filter((url) => url.startsWith('/'))

    for (const url of assets) {
      const plain = await get(app, url)
      const zipped = await get(app, url, { 'accept-encoding': 'gzip' })
      const body = await plain.text()
      expect({ url, status: plain.status, type: plain.headers.get('content-type'), empty: body.length === 0, encoding: zipped.headers.get('content-encoding') }).toEqual({
        url,
        status: 200,
        type: url.endsWith('.css') ? expect.stringMatching(/^text\/css/) : expect.stringMatching(/^text\/javascript/),
        empty: false,
        encoding: 'gzip',
      })
      expect(new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(await zipped.arrayBuffer())))).toBe(body)
    }
    expect(assets.filter((url) => url.endsWith('.js'))).toHaveLength(2)
    expect(assets.filter((url) => url.endsWith('.css'))).toHaveLength(1)
  })

  test('serves Swagger UI itself, whose stylesheet loads nothing from elsewhere', async () => {
    const [bundle, stylesheet] = await Promise.all([get(app, '/docs/assets/swagger-ui-bundle.js').then((answer) => answer.text()), get(app, '/docs/assets/swagger-ui.css').then((answer) => answer.text())])

    expect(bundle).toContain('SwaggerUIBundle')
    const urls = [...stylesheet.matchAll(/url\(\s*["']?([^"')]*)/g)].map((match) => match[1]!)
    expect(urls.filter((url) => !url.startsWith('data:'))).toEqual([])
    expect(stylesheet).not.toMatch(/@import/)
  })

  test('starts Swagger UI on the gateway\'s own document, under any prefix, without the third-party validator', async () => {
    const script = await (await get(app, '/docs/assets/start.js')).text()

    expect(startedWith(script, '/docs')).toMatchObject({ url: '/openapi.json', dom_id: '#reference', validatorUrl: null, presets: ['apis-preset'] })
    expect(startedWith(script, '/gateway/docs/')).toMatchObject({ url: '/gateway/openapi.json' })
    expect(html).toContain('id="reference"')
    expect(script).not.toMatch(/https?:\/\//)
  })

  test('answers other files under /docs/assets/ with 404 in the error envelope, and keeps them out of the OpenAPI document', async () => {
    const answers = await Promise.all(['/docs/assets/nope.js', '/docs/assets/constructor', '/docs/assets/../openapi.json.map'].map((path) => get(app, path)))
    const document = (await (await get(app, '/openapi.json')).json()) as { paths: Record<string, unknown> }

    expect(await Promise.all(answers.map(async (answer) => [answer.status, ((await answer.json()) as { error: { code: string } }).error.code]))).toEqual([
      [404, 'not_found'],
      [404, 'not_found'],
      [404, 'not_found'],
    ])
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/docs/'))).toEqual([])
  })
})
