import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { deletedObject, listOf, orNull, unixSeconds } from './fields'

const milliseconds = () => Type.Integer({ minimum: 1 })

/** An upstream deployment of a model, with its health on the instance that answers. */
export const Deployment = t.Object({
  object: t.Literal('deployment'),
  id: t.String(),
  model_id: t.String(),
  source: t.Union([t.Literal('database'), t.Literal('file')], { description: 'Where it is declared: added through this API, or in the catalog file.' }),
  provider: t.Union([t.Literal('simulator'), t.Literal('openai-compatible')]),
  base_url: orNull(t.String()),
  upstream_model: t.String(),
  region: t.String(),
  weight: Type.Integer(),
  max_concurrent: orNull(Type.Integer({ description: 'Requests sent to it at once, at most.' })),
  timeouts_ms: t.Object({ connect: milliseconds(), first_token: milliseconds(), idle: milliseconds(), total: milliseconds() }),
  api_key_env: orNull(t.String({ description: "The environment variable holding the upstream's key; the key itself is never shown." })),
  developer_role: t.Union([t.Literal('developer'), t.Literal('system')], {
    description: "The role developer messages are sent upstream as: 'developer' as they came (sent again as 'system' if the upstream refuses the role), or 'system' from the first try.",
  }),
  circuit: t.Object({
    failures: Type.Integer({ description: 'Failures in a row that open the circuit.' }),
    cooldown_ms: Type.Integer(),
    state: t.Union([t.Literal('closed'), t.Literal('open'), t.Literal('half_open')]),
  }),
  in_flight: Type.Integer({ description: 'Requests it serves now, on this instance.' }),
  created_at: orNull(unixSeconds('Unix seconds; null for deployments of the catalog file.')),
})

export const DeploymentList = listOf(Deployment)
export const DeploymentDeleted = deletedObject('deployment.deleted')

/** A reload of the catalog file, asked of every instance. */
export const CatalogReload = t.Object({ object: t.Literal('catalog.reload'), requested: t.Boolean() })
