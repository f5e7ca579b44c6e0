import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { dashboardPaths, isDashboardPath } from '../../../web/paths'
import type { RouteTable } from '../plugins/error-handler'
import { webAssetsPath, type WebBuild, type WebBundle } from '../web-bundle'
import { fileResponse } from '../web-file'

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

/** The dashboard's paths as the router declares them: a prefix ending in `/` takes anything below it. */
const routePaths = dashboardPaths.map((page) => (page !== '/' && page.endsWith('/') ? `${page}*` : page))

export const webRouteTable: RouteTable = [
  ...dashboardPaths.map((page) => ({ pattern: new RegExp(`^${escape(page)}${page !== '/' && page.endsWith('/') ? '.+' : '/?'}$`), methods: ['GET', 'HEAD'] })),
  { pattern: new RegExp(`^${escape(webAssetsPath)}.+$`), methods: ['GET', 'HEAD'] },
]

/** Whether a route of the app is one of the dashboard's (its pages and assets), not of the API. */
export function isWebRoute(route: { path: string }): boolean {
  return route.path === `${webAssetsPath}*` || (routePaths as readonly string[]).includes(route.path)
}

/**
 * The strictest policy the page runs under: its own scripts, styles, images and fonts only, API
 * calls to its own origin, no frames, no plugins, forms posting home.
 */
export const dashboardContentSecurityPolicy =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const pageHeaders = {
  'content-security-policy': dashboardContentSecurityPolicy,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // The page names the current assets: revalidated on every load (its ETag makes that cheap).
  'cache-control': 'no-cache',
}

const assetHeaders = {
  'x-content-type-options': 'nosniff',
  // Asset names carry their content's hash: a name never changes what it holds.
  'cache-control': 'public, max-age=31536000, immutable',
}

const notFound = (method: string, path: string) => new GatewayError('not_found', `No route ${method} ${path}.`)

/** The built dashboard, or 503 when it cannot be built (the build's error is in the log). */
async function built(bundle: WebBundle): Promise<WebBuild> {
  try {
    return await bundle.get()
  } catch {
    throw new GatewayError('service_unavailable', 'The dashboard could not be built; the gateway log says why. The API is not affected.')
  }
}

/**
 * The dashboard: its page at every path of `web/paths.ts` (the client-side router takes it from
 * there) and its content-hashed assets under /assets/, built on the first request. GET and HEAD
 * only; every other path stays the API's.
 */
export function webRoutes(bundle: WebBundle) {
  const page = async ({ request, path }: { request: Request; path: string }) => {
    // A prefix route also matches the bare prefix ('/projects/'), which is no page.
    if (!isDashboardPath(path)) throw notFound(request.method, path)
    return fileResponse((await built(bundle)).page, request, pageHeaders)
  }
  const asset = async ({ request, path }: { request: Request; path: string }) => {
    const file = (await built(bundle)).assets.get(path.slice(webAssetsPath.length))
    if (file === undefined) throw notFound(request.method, path)
    return fileResponse(file, request, assetHeaders)
  }
  const app = new Elysia({ name: 'web', normalize: false })
  for (const route of routePaths) app.get(route, page)
  return app.get(`${webAssetsPath}*`, asset)
}
