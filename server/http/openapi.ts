import { Elysia } from 'elysia'
import { buildOpenApiDocument, type AppRoute } from './openapi/document'
import type { RouteTable } from './plugins/error-handler'

export const openApiRouteTable: RouteTable = [{ pattern: /^\/(openapi\.json|docs)\/?$/, methods: ['GET'] }]

// The reference page loads Scalar from a CDN, pinned to one version and checked by its hash.
const scalarScript = {
  src: 'https://cdn.jsdelivr.net/npm/@scalar/api-reference@1.72.1/dist/browser/standalone.js',
  integrity: 'sha384-U11tb2XnKvmwt8RlTvnwUnYgrN+ur4Xyh9htLhjajWNR/Oyl5AX5DEz00qRmlrmK',
}

const referencePage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>nilegate API reference</title>
  </head>
  <body>
    <div id="app"></div>
    <script src="${scalarScript.src}" integrity="${scalarScript.integrity}" crossorigin="anonymous"></script>
    <script>Scalar.createApiReference('#app', { url: location.pathname.slice(0, location.pathname.lastIndexOf('/docs')) + '/openapi.json' })</script>
  </body>
</html>
`

/**
 * `GET /openapi.json`, the OpenAPI 3.1 document of every route of the app, and `GET /docs`, a page
 * that renders it. Both are public. The document is built on its first request, from the routes
 * the app has by then (`routes` is read late, once the whole app is assembled), and kept.
 */
export function openApiRoutes(routes: () => readonly AppRoute[], options: { publicBaseUrl?: string | null } = {}) {
  // PUBLIC_BASE_URL names the API's base (`.../v1`); the document's paths start with /v1.
  const serverUrl = options.publicBaseUrl ? options.publicBaseUrl.replace(/\/v1\/?$/, '') : null
  let document: Record<string, unknown> | null = null
  return new Elysia({ name: 'openapi', normalize: false })
    .get('/openapi.json', (): Record<string, unknown> => (document ??= buildOpenApiDocument(routes(), { serverUrl })))
    .get('/docs', ({ set }) => {
      set.headers['content-type'] = 'text/html; charset=utf-8'
      return referencePage
    })
}
