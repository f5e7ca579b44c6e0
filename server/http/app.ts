import { Elysia } from 'elysia'
import type { ApiKeyCache } from '../core/authenticate'
import { EdgeLimiter } from '../core/edge-limiter'
import { KeyUseDenialRecorder } from '../core/key-use-denials'
import type { InferenceDeps } from '../core/inference'
import { defaultRouter } from '../core/router'
import type { ManagementDeps } from './management'
import { openApiRouteTable, openApiRoutes } from './openapi'
import { errorHandler, type RouteTable } from './plugins/error-handler'
import { refuseUnstorableText } from './plugins/storable-text'
import { BodyBudget, defaultBodyLimitBytes, inferenceBodyLimitBytes, readJsonBody } from './request-body'
import { adminRouteTable, adminRoutes } from './routes/admin'
import { adminDeploymentRouteTable, adminDeploymentRoutes } from './routes/admin-deployments'
import { auditLogRouteTable, auditLogRoutes } from './routes/audit-logs'
import { authRouteTable, authRoutes } from './routes/auth'
import { changelogRouteTable, changelogRoutes } from './routes/changelog'
import { inferenceRoutes } from './routes/inference'
import { modelRoutes } from './routes/models'
import { organizationRouteTable, organizationRoutes } from './routes/organizations'
import { playgroundRouteTable, playgroundRoutes } from './routes/playground'
import { projectRouteTable, projectRoutes } from './routes/projects'
import { usageRouteTable, usageRoutes } from './routes/usage'

export interface AppDeps extends InferenceDeps {
  keys: ApiKeyCache
  /** Bytes of request bodies that may be in flight at once. */
  bodyBudgetBytes: number
  /** The per-key burst guard; the SPEC's limits when absent. */
  edge?: EdgeLimiter
  /** Accounts, organizations, projects, keys, the operator API and the audit trail. */
  management: ManagementDeps
}

const routeTable: RouteTable = [
  { pattern: /^\/v1\/chat\/completions\/?$/, methods: ['POST'] },
  { pattern: /^\/v1\/embeddings\/?$/, methods: ['POST'] },
  { pattern: /^\/v1\/models(\/.*)?$/, methods: ['GET'] },
  ...changelogRouteTable,
  ...authRouteTable,
  ...organizationRouteTable,
  ...projectRouteTable,
  ...auditLogRouteTable,
  ...usageRouteTable,
  ...playgroundRouteTable,
  ...adminRouteTable,
  ...adminDeploymentRouteTable,
  ...openApiRouteTable,
]

const inferencePaths = new Set(['/v1/chat/completions', '/v1/embeddings'])
const exposedHeaders = 'X-Request-Id, Retry-After, X-RateLimit-Limit-Requests, X-RateLimit-Remaining-Requests, Idempotent-Replayed, Deprecation, Sunset, Link'

// Request ids are a random prefix per process plus a counter: unique across instances, and cheaper
// than a random UUID per request.
const requestIdPrefix = `req_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`
let requestCounter = 0

function newRequestId(): string {
  return `${requestIdPrefix}${(++requestCounter).toString(36).padStart(8, '0')}`
}

/**
 * The routes that keep what they are sent in the database, behind the refusal of text Postgres
 * cannot hold; the others (inference, the playground, the catalog, the documents) store none of
 * it and take any text a client sends.
 */
function managementRoutes(deps: AppDeps) {
  return new Elysia({ name: 'management-routes', normalize: false })
    .onBeforeHandle(refuseUnstorableText)
    .use(authRoutes(deps.management))
    .use(organizationRoutes(deps.management))
    .use(projectRoutes(deps.management))
    .use(auditLogRoutes(deps.management))
    .use(usageRoutes(deps.management))
    .use(adminRoutes(deps.management))
    .use(adminDeploymentRoutes(deps.management, deps.router ?? defaultRouter(deps.catalog)))
}

/** The gateway's HTTP application; `App` is its type, for the typed SDK. */
export function buildApp(deps: AppDeps) {
  const bodyBudget = new BodyBudget(deps.bodyBudgetBytes)
  const edge = deps.edge ?? new EdgeLimiter()
  const keyAuth = {
    keys: deps.keys,
    edge,
    trustedProxies: deps.management.trustedProxies,
    denials: new KeyUseDenialRecorder(deps.management.governance.projects, { log: deps.log }),
  }
  const app = new Elysia({ name: 'nilegate', normalize: false })
    .onRequest(({ request, set }) => {
      set.headers['x-request-id'] = newRequestId()
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
    })
    .use(errorHandler(routeTable))
    // Every body is read here, capped by route (SPEC 8.2), whatever its Content-Type says.
    .onParse(({ request, path }) => readJsonBody(request, inferencePaths.has(path) ? inferenceBodyLimitBytes : defaultBodyLimitBytes, bodyBudget))
    .use(modelRoutes(deps.catalog, keyAuth))
    .use(inferenceRoutes({ ...deps, ...keyAuth }))
    .use(changelogRoutes(deps.catalog))
    .use(playgroundRoutes(deps, deps.management))
    .use(managementRoutes(deps))
  return app.use(openApiRoutes(() => app.routes, { publicBaseUrl: deps.management.publicBaseUrl }))
}

export type App = ReturnType<typeof buildApp>
