import { Elysia } from 'elysia'
import type { ApiKeyCache } from '../core/authenticate'
import { addressGroup, AuthFailureLimiter } from '../core/auth-failure-limiter'
import { clientIp } from '../core/client-ip'
import { EdgeLimiter } from '../core/edge-limiter'
import { KeyUseDenialRecorder } from '../core/key-use-denials'
import type { InferenceDeps } from '../core/inference'
import { defaultRouter } from '../core/router'
import type { GatewayMetrics } from '../observability/gateway-metrics'
import type { Readiness } from '../observability/readiness'
import type { RequestObserver } from '../observability/request-record'
import type { ManagementDeps } from './management'
import { docsAssetRoutes, isDocsAssetRoute, openApiRouteTable, openApiRoutes } from './openapi'
import { errorHandler, type RouteTable } from './plugins/error-handler'
import { observeRequests } from './plugins/request-observation'
import { refuseUnstorableText } from './plugins/storable-text'
import { BodyBudget, defaultShares } from './body-budget'
import { BodyIdleWatch } from './body-idle-watch'
import { bodyIdleTimeoutMs, bodyLimitFor, BodyReader, declaredLength, defaultBodyLimitBytes, inferenceBodyLimitBytes, isReadingBodyAfterAuth, unreadBody } from './request-body'
import { adminRouteTable, adminRoutes } from './routes/admin'
import { adminDeploymentRouteTable, adminDeploymentRoutes } from './routes/admin-deployments'
import { adminOrganizationRecordRouteTable, adminOrganizationRecordRoutes } from './routes/admin-organization-records'
import { auditLogRouteTable, auditLogRoutes } from './routes/audit-logs'
import { authRouteTable, authRoutes } from './routes/auth'
import { changelogRouteTable, changelogRoutes } from './routes/changelog'
import { healthRouteTable, healthRoutes } from './routes/health'
import { inferenceRoutes } from './routes/inference'
import { metricsRouteTable, metricsRoutes } from './routes/metrics'
import { modelRoutes } from './routes/models'
import { organizationModelRouteTable, organizationModelRoutes } from './routes/organization-models'
import { organizationRouteTable, organizationRoutes } from './routes/organizations'
import { playgroundRouteTable, playgroundRoutes } from './routes/playground'
import { projectRouteTable, projectRoutes } from './routes/projects'
import { usageRouteTable, usageRoutes } from './routes/usage'
import { isWebRoute, webRouteTable, webRoutes } from './routes/web'
import { WebBundle } from './web-bundle'

export interface AppDeps extends InferenceDeps {
  keys: ApiKeyCache
  /** Bytes of request bodies that may be in flight at once. */
  bodyBudgetBytes: number
  /** How long a body may go without a chunk before it is dropped with 408; `bodyIdleTimeoutMs` when absent. */
  bodyIdleTimeoutMs?: number
  /** Bounds lookups of credentials that do not exist, per client address; the default allowance when absent. */
  authFailures?: AuthFailureLimiter
  /** The per-key burst guard; the SPEC's limits when absent. */
  edge?: EdgeLimiter
  /** Accounts, organizations, projects, keys, the operator API and the audit trail. */
  management: ManagementDeps
  /** The dashboard, built on its first request; one of its own per app when absent. */
  web?: WebBundle
  /** Probes, metrics and each request's log line; without it /readyz reports ready and /metrics answers 404. */
  observability?: AppObservability
}

/** What the app observes itself with (see `AppDeps.observability`). */
export interface AppObservability {
  /** Gives each request its log line and metrics. */
  requests?: RequestObserver
  /** GET /metrics; 404 when null (METRICS=off). */
  metrics?: GatewayMetrics | null
  /** The bearer token GET /metrics requires, or null for none. */
  metricsToken?: string | null
  /** GET /readyz. */
  readiness?: Readiness
  /** Where errors no client is told about go (console.error when absent). */
  log?: (message: string, error?: unknown) => void
}

const routeTable: RouteTable = [
  ...healthRouteTable,
  ...metricsRouteTable,
  { pattern: /^\/v1\/chat\/completions\/?$/, methods: ['POST'] },
  { pattern: /^\/v1\/embeddings\/?$/, methods: ['POST'] },
  { pattern: /^\/v1\/models(\/.*)?$/, methods: ['GET'] },
  ...changelogRouteTable,
  ...authRouteTable,
  ...organizationRouteTable,
  ...organizationModelRouteTable,
  ...projectRouteTable,
  ...auditLogRouteTable,
  ...usageRouteTable,
  ...playgroundRouteTable,
  ...adminRouteTable,
  ...adminOrganizationRecordRouteTable,
  ...adminDeploymentRouteTable,
  ...openApiRouteTable,
  ...webRouteTable,
]

const exposedHeaders = 'X-Request-Id, Retry-After, X-RateLimit-Limit-Requests, X-RateLimit-Remaining-Requests, X-RateLimit-Reset-Requests, Idempotent-Replayed, Deprecation, Sunset, Link'

// Request ids are a random prefix per process plus a counter: unique across instances, and cheaper
// than a random UUID per request.
const requestIdPrefix = `req_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`
let requestCounter = 0

function newRequestId(): string {
  return `${requestIdPrefix}${(++requestCounter).toString(36).padStart(8, '0')}`
}

/** Whether a route of the app is one of the API's, not a file of the dashboard or of the reference page. */
export const isApiRoute = (route: { path: string }) => !isWebRoute(route) && !isDocsAssetRoute(route)

/**
 * The routes that keep what they are sent in the database, behind the refusal of text Postgres
 * cannot hold; the others (inference, the playground, the catalog, the documents) store none of
 * it and take any text a client sends.
 */
function managementRoutes(management: ManagementDeps, deps: AppDeps) {
  return new Elysia({ name: 'management-routes', normalize: false })
    .onBeforeHandle(refuseUnstorableText)
    .use(authRoutes(management))
    .use(organizationRoutes(management))
    .use(organizationModelRoutes(management))
    .use(projectRoutes(management))
    .use(auditLogRoutes(management))
    .use(usageRoutes(management))
    .use(adminRoutes(management))
    .use(adminOrganizationRecordRoutes(management))
    .use(adminDeploymentRoutes(management, deps.router ?? defaultRouter(deps.catalog)))
}

/** Method, then route pattern, of the routes whose authentication reads their body (`readsBodyAfterAuth`). */
type RouteSet = Map<string, Set<string>>

function routesReadingBodyAfterAuth(routes: ReadonlyArray<{ method: string; path: string; hooks?: unknown }>): RouteSet {
  const found: RouteSet = new Map()
  for (const { method, path, hooks } of routes) {
    const transforms = (hooks as { transform?: Array<{ fn?: unknown }> | { fn?: unknown } } | undefined)?.transform
    const list = Array.isArray(transforms) ? transforms : transforms ? [transforms] : []
    if (!list.some((hook) => isReadingBodyAfterAuth(hook.fn))) continue
    let paths = found.get(method)
    if (!paths) found.set(method, (paths = new Set()))
    paths.add(path)
  }
  return found
}

/** The gateway's HTTP application; `App` is its type, for the typed SDK. */
export function buildApp(deps: AppDeps) {
  const bodyBudget = new BodyBudget(deps.bodyBudgetBytes, defaultShares(deps.bodyBudgetBytes, inferenceBodyLimitBytes, defaultBodyLimitBytes))
  const bodies = new BodyReader(bodyBudget, new BodyIdleWatch(deps.bodyIdleTimeoutMs ?? bodyIdleTimeoutMs))
  const authFailures = deps.authFailures ?? new AuthFailureLimiter()
  const management: ManagementDeps = { ...deps.management, bodies, authFailures }
  const edge = deps.edge ?? new EdgeLimiter()
  const keyAuth = {
    keys: deps.keys,
    edge,
    trustedProxies: management.trustedProxies,
    denials: new KeyUseDenialRecorder(management.governance.projects, { log: deps.log }),
    bodies,
    failures: authFailures,
  }
  const observability = deps.observability ?? {}
  // With metrics off and request lines below the log level, requests are not observed at all.
  const requests = observability.requests?.isActive ? observability.requests : null
  // Filled once every route is in: the routes whose body waits for their credential.
  let readingAfterAuth: RouteSet = new Map()
  const app = new Elysia({ name: 'nilegate', normalize: false })
    .onRequest(({ request, set }) => {
      const requestId = newRequestId()
      set.headers['x-request-id'] = requestId
      // Browsers send Origin with every cross-origin request, and only they read CORS headers: a
      // POST without Origin (SDKs, servers) goes without them, as each header costs the hot path
      // about half a microsecond. Other methods keep them, so a cached GET serves browsers too.
      if (request.method !== 'POST' || request.headers.get('origin') !== null) {
        set.headers['access-control-allow-origin'] = '*'
        set.headers['access-control-expose-headers'] = exposedHeaders
      }
      if (request.method === 'OPTIONS') {
        set.headers['access-control-allow-methods'] = 'GET, POST, DELETE, OPTIONS'
        set.headers['access-control-allow-headers'] = request.headers.get('access-control-request-headers') ?? 'authorization, content-type'
        set.headers['access-control-max-age'] = '86400'
        return new Response(null, { status: 204, headers: set.headers as Record<string, string> })
      }
      requests?.start(request, requestId)
    })
    .use(errorHandler(routeTable, { log: observability.log, observer: requests }))
    .use(observeRequests(requests))
    // Every body is read as JSON, capped by route (SPEC 8.2), whatever its Content-Type says. A
    // route that takes an API key or a session reads it only once its guard has let the request
    // in (a declared size over the cap is refused first, from the headers); the others read it
    // here, in the name of the client's address, with requests without a credential sharing part
    // of the budget.
    .onParse((context) => {
      const { request, path, route, server, set } = context
      const limitBytes = bodyLimitFor(path)
      if (readingAfterAuth.get(request.method)?.has(route) === true) {
        declaredLength(request, limitBytes)
        return unreadBody
      }
      const ip = clientIp(server?.requestIP(request)?.address ?? null, request.headers.get('x-forwarded-for'), management.trustedProxies)
      return bodies.read(request, limitBytes, addressGroup(ip), true, set.headers)
    })
    .use(healthRoutes(observability.readiness ?? null))
    .use(metricsRoutes(observability.metrics ?? null, observability.metricsToken ?? null))
    .use(modelRoutes(deps.catalog, keyAuth))
    .use(inferenceRoutes({ ...deps, ...keyAuth, requests }))
    .use(changelogRoutes(deps.catalog))
    .use(playgroundRoutes({ ...deps, requests }, management))
    .use(managementRoutes(management, deps))
  const built = app.use(openApiRoutes(() => app.routes.filter(isApiRoute), { publicBaseUrl: management.publicBaseUrl }))
  // The pages' files join the app but not its type: they are no part of the API the SDK types.
  built.use(webRoutes(deps.web ?? new WebBundle({ log: deps.log }))).use(docsAssetRoutes())
  readingAfterAuth = routesReadingBodyAfterAuth(built.routes)
  return built
}

export type App = ReturnType<typeof buildApp>
