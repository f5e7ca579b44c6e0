import { Elysia, t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { GatewayError } from '@nilegate/shared/errors'
import { nullable } from '@nilegate/shared/schemas/common'
import type { Catalog, CatalogModel, Deployment } from '../../core/catalog'
import { resolveNewDeployment } from '../../core/governance/deployments'
import type { Router } from '../../core/router'
import { idempotent } from '../idempotency'
import { operatorAccess, type ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'
import { bodilessAsEmpty } from './admin'

export const adminDeploymentRouteTable: RouteTable = [
  { pattern: /^\/v1\/admin\/deployments\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/admin\/deployments\/[^/]+\/?$/, methods: ['DELETE'] },
  { pattern: /^\/v1\/admin\/catalog\/reload\/?$/, methods: ['POST'] },
]

const timeoutMs = Type.Integer({ minimum: 1, maximum: 86_400_000, error: 'must be a whole number of milliseconds from 1 to 86400000' })

const ListDeployments = t.Object({ model_id: t.Optional(t.String({ minLength: 1, maxLength: 200 })) }, { additionalProperties: false })
const CreateDeployment = t.Object(
  {
    model_id: t.String({ minLength: 1, maxLength: 200 }),
    provider: t.Union([t.Literal('openai-compatible'), t.Literal('simulator')], { error: "must be 'openai-compatible' or 'simulator'" }),
    base_url: t.Optional(t.String({ minLength: 1, maxLength: 2_000 })),
    upstream_model: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
    region: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
    weight: t.Optional(Type.Integer({ minimum: 1, maximum: 10_000, error: 'must be an integer from 1 to 10000' })),
    max_concurrent: nullable(Type.Integer({ minimum: 1, maximum: 1_000_000, error: 'must be a positive integer, or null for no limit' })),
    timeouts_ms: t.Optional(
      t.Object(
        { connect: t.Optional(timeoutMs), first_token: t.Optional(timeoutMs), idle: t.Optional(timeoutMs), total: t.Optional(timeoutMs) },
        { additionalProperties: false },
      ),
    ),
    api_key_env: nullable(t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$', error: 'must be the name of an environment variable, like VLLM_API_KEY' })),
    developer_role: t.Optional(t.Union([t.Literal('developer'), t.Literal('system')], { error: "must be 'developer' or 'system'" })),
  },
  { additionalProperties: false },
)
const NoFields = t.Object({}, { additionalProperties: false })

/**
 * A deployment as operators see it, with its health on the instance that answers (each instance
 * keeps its own). `api_key_env` names the variable that holds the upstream's key: the key is never
 * shown.
 */
function deploymentObject(catalog: Catalog, router: Router, model: CatalogModel, deployment: Deployment) {
  const stored = catalog.storedDeployment(deployment.id)
  return {
    object: 'deployment' as const,
    id: deployment.id,
    model_id: model.id,
    source: stored ? ('database' as const) : ('file' as const),
    provider: deployment.provider,
    base_url: deployment.baseUrl,
    upstream_model: deployment.upstreamModel,
    region: deployment.region,
    weight: deployment.weight,
    max_concurrent: deployment.maxConcurrent,
    timeouts_ms: { connect: deployment.timeouts.connectMs, first_token: deployment.timeouts.firstTokenMs, idle: deployment.timeouts.idleMs, total: deployment.timeouts.totalMs },
    api_key_env: deployment.apiKeyEnv,
    developer_role: deployment.developerRole,
    circuit: { failures: deployment.circuit.failures, cooldown_ms: deployment.circuit.cooldownMs, state: router.circuit(deployment) },
    in_flight: router.inFlight(deployment),
    created_at: stored?.createdAt ?? null,
  }
}

function catalogModel(catalog: Catalog, modelId: string): CatalogModel {
  const model = catalog.find(modelId)
  if (!model) throw new GatewayError('invalid_request', `'${modelId}' is not a model of the catalog.`, 'model_id')
  return model
}

/**
 * The operators' API of upstream deployments: every deployment the catalog routes to (from the
 * catalog file and from the database), deployments added to and removed from the database, and a
 * reload of the catalog file on every instance. A stored change applies here at once and reaches
 * the other instances on the change bus.
 */
export function adminDeploymentRoutes(deps: ManagementDeps, router: Router) {
  const store = deps.governance.deployments
  const { catalog } = deps

  return new Elysia({ normalize: false })
    .use(operatorAccess(deps))
    .onTransform(bodilessAsEmpty)
    .get(
      '/v1/admin/deployments',
      ({ query }) => {
        const models = query.model_id === undefined ? catalog.models : [catalogModel(catalog, query.model_id)]
        const data = models.flatMap((model) => model.deployments.map((deployment) => deploymentObject(catalog, router, model, deployment)))
        return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false }
      },
      { query: ListDeployments },
    )
    .post(
      '/v1/admin/deployments',
      ({ body, principal, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const settings = resolveNewDeployment(catalog, {
            modelId: body.model_id,
            provider: body.provider,
            baseUrl: body.base_url,
            upstreamModel: body.upstream_model,
            region: body.region,
            weight: body.weight,
            maxConcurrent: body.max_concurrent,
            timeouts: { connectMs: body.timeouts_ms?.connect, firstTokenMs: body.timeouts_ms?.first_token, idleMs: body.timeouts_ms?.idle, totalMs: body.timeouts_ms?.total },
            apiKeyEnv: body.api_key_env,
            developerRole: body.developer_role,
          })
          const { added, deployments } = await store.addDeployment(settings, principal.actor)
          catalog.applyDeployments(deployments)
          await deps.changes.publish({ kind: 'deployments' })
          const model = catalog.find(added.modelId)!
          set.status = 201
          return deploymentObject(catalog, router, model, model.deployments.find((deployment) => deployment.id === added.id)!)
        }),
      { body: CreateDeployment },
    )
    .delete('/v1/admin/deployments/:id', async ({ params, principal }) => {
      if (!catalog.storedDeployment(params.id) && catalog.models.some((model) => model.deployments.some((deployment) => deployment.id === params.id))) {
        throw new GatewayError('invalid_request', `The deployment '${params.id}' is declared by the catalog file; change the file and reload it to remove it.`, 'id')
      }
      const result = await store.removeDeployment(params.id, principal.actor)
      if (!result) throw new GatewayError('not_found', `No stored deployment '${params.id}'.`, 'id')
      catalog.applyDeployments(result.deployments)
      await deps.changes.publish({ kind: 'deployments' })
      return { object: 'deployment.deleted' as const, id: params.id, deleted: true }
    })
    .post(
      '/v1/admin/catalog/reload',
      async ({ set }) => {
        // Each instance re-reads its own NILEGATE_CONFIG (this one too, through its listener) and logs
        // the outcome; a file that does not parse leaves that instance's catalog as it was.
        await deps.changes.publish({ kind: 'catalog_file' })
        set.status = 202
        return { object: 'catalog.reload' as const, requested: true }
      },
      { body: NoFields },
    )
}
