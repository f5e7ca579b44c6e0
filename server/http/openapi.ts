import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { buildOpenApiDocument, type AppRoute } from './openapi/document'
import type { RouteTable } from './plugins/error-handler'
import { fileResponse, webFile, type WebFile } from './web-file'

/** Where the reference page's script and stylesheet are served. */
export const docsAssetsPath = '/docs/assets/'

export const openApiRouteTable: RouteTable = [
  { pattern: /^\/(openapi\.json|docs)\/?$/, methods: ['GET'] },
  { pattern: /^\/docs\/assets\/.+$/, methods: ['GET'] },
]

/** Whether a route serves the reference page's files: a part of the page, not of the API. */
export const isDocsAssetRoute = (route: { path: string }) => route.path === `${docsAssetsPath}*`

// Swagger UI renders the document, served from the gateway itself so that the page works offline.
// Our own script starts it: the page's policy allows no inline script.
const startScript = `'use strict'
// The document is served beside this page, under whatever prefix the page is reached at.
const prefix = location.pathname.slice(0, location.pathname.lastIndexOf('/docs'))
window.ui = SwaggerUIBundle({
  url: prefix + '/openapi.json',
  dom_id: '#reference',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  // The default checks the document on a third-party site: nothing leaves the gateway.
  validatorUrl: null,
})
`

const referencePage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>nilegate API reference</title>
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="${docsAssetsPath}swagger-ui.css" />
  </head>
  <body>
    <main id="reference"></main>
    <script src="${docsAssetsPath}swagger-ui-bundle.js"></script>
    <script src="${docsAssetsPath}start.js"></script>
  </body>
</html>
`

/**
 * The reference page's policy, as strict as the dashboard's: Swagger UI sets its styles through
 * the DOM, which `style-src 'self'` allows, and nothing leaves the gateway.
 */
export const docsContentSecurityPolicy =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const docsHeaders = {
  'content-security-policy': docsContentSecurityPolicy,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // Not content-hashed names: revalidated on each load, which the ETag makes a 304.
  'cache-control': 'no-cache',
}

/** A file of swagger-ui-dist, read when first asked for. */
const swaggerFile = (name: string, type: string) => async () =>
  webFile(new Uint8Array(await Bun.file(Bun.fileURLToPath(import.meta.resolve(`swagger-ui-dist/${name}`))).arrayBuffer()), type)

const docsFiles: Record<string, () => Promise<WebFile>> = {
  'swagger-ui-bundle.js': swaggerFile('swagger-ui-bundle.js', 'text/javascript;charset=utf-8'),
  'swagger-ui.css': swaggerFile('swagger-ui.css', 'text/css;charset=utf-8'),
  'start.js': async () => webFile(new TextEncoder().encode(startScript), 'text/javascript;charset=utf-8'),
}

/** The reference page's files, each read and gzipped once, on its first request. */
function docsAssets() {
  const loaded = new Map<string, Promise<WebFile>>()
  return (name: string): Promise<WebFile> | null => {
    if (!Object.hasOwn(docsFiles, name)) return null
    const load = docsFiles[name]!
    let file = loaded.get(name)
    if (file === undefined) {
      file = load()
      // A file that could not be read is tried again on the next request.
      file.catch(() => loaded.delete(name))
      loaded.set(name, file)
    }
    return file
  }
}

/**
 * `GET /docs/assets/*`: Swagger UI's script and stylesheet and the script that starts it. They
 * belong to the page, not to the API, so they stay out of the OpenAPI document.
 */
export function docsAssetRoutes() {
  const asset = docsAssets()
  return new Elysia({ name: 'docs-assets', normalize: false }).get(`${docsAssetsPath}*`, async ({ request, path }) => {
    const file = asset(path.slice(docsAssetsPath.length))
    if (file === null) throw new GatewayError('not_found', `No route ${request.method} ${path}.`)
    return fileResponse(await file, request, docsHeaders)
  })
}

/**
 * `GET /openapi.json`, the OpenAPI 3.1 document of every route of the app, and `GET /docs`, a page
 * that renders it with files the gateway serves itself (`docsAssetRoutes`). Both are public. The
 * document is built on its first request, from the routes the app has by then (`routes` is read
 * late, once the whole app is assembled), and kept.
 */
export function openApiRoutes(routes: () => readonly AppRoute[], options: { publicBaseUrl?: string | null } = {}) {
  // PUBLIC_BASE_URL names the API's base (`.../v1`); the document's paths start with /v1.
  const serverUrl = options.publicBaseUrl ? options.publicBaseUrl.replace(/\/v1\/?$/, '') : null
  let document: Record<string, unknown> | null = null
  return new Elysia({ name: 'openapi', normalize: false })
    .get('/openapi.json', (): Record<string, unknown> => (document ??= buildOpenApiDocument(routes(), { serverUrl })))
    // A string, not a Response: the document describes this route's answer as text, as its type says.
    .get('/docs', ({ set }): string => {
      Object.assign(set.headers, docsHeaders, { 'content-type': 'text/html; charset=utf-8' })
      return referencePage
    })
}
