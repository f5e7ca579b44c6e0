import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import type { ModelList } from '@nilegate/shared/schemas/models'
import type { ApiKeyCache } from '../../core/authenticate'
import type { Catalog } from '../../core/catalog'
import type { EdgeLimiter } from '../../core/edge-limiter'
import { toModelObject } from '../../core/model-view'
import { resolveModel } from '../../core/resolve-model'
import { apiKeyAuth } from '../plugins/api-key-auth'

/** GET /v1/models and GET /v1/models/{model}; model ids may contain '/', raw or as %2F. */
export function modelRoutes(catalog: Catalog, keys: ApiKeyCache, edge: EdgeLimiter) {
  const list: ModelList = { object: 'list', data: catalog.models.filter((model) => model.status === 'live').map(toModelObject) }
  return new Elysia({ name: 'models', normalize: false })
    .derive(apiKeyAuth(keys, edge, 'models.read'))
    .get('/v1/models', () => list)
    .get('/v1/models/*', ({ params }) => {
      let id: string
      try {
        id = decodeURIComponent(params['*'])
      } catch {
        throw new GatewayError('invalid_request', 'The model id in the path is not valid percent-encoding.', 'model')
      }
      const model = catalog.find(id)
      if (!model) throw new GatewayError('not_found', `The model '${id}' does not exist or is not in your catalog.`, 'model')
      return toModelObject(model.status === 'live' ? model : resolveModel(catalog, id, model.modality))
    })
}
