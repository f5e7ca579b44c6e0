import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import type { ModelList, ModelObject } from '@nilegate/shared/schemas/models'
import type { Catalog, CatalogModel } from '../../core/catalog'
import { toModelObject } from '../../core/model-view'
import type { ApiKeyIdentity } from '../../core/ports'
import { mayUseModel, resolveModel } from '../../core/resolve-model'
import { apiKeyAuth, type KeyAuthDeps } from '../plugins/api-key-auth'

/**
 * GET /v1/models (the live models this key may call) and GET /v1/models/{model}; model ids may
 * contain '/', raw or as %2F.
 */
export function modelRoutes(catalog: Catalog, auth: KeyAuthDeps) {
  // The catalog hands out the same model object until a retirement changes it, so each view is built once.
  const views = new WeakMap<CatalogModel, ModelObject>()
  const viewOf = (model: CatalogModel) => {
    let view = views.get(model)
    if (!view) views.set(model, (view = toModelObject(model)))
    return view
  }
  const listFor = (identity: ApiKeyIdentity): ModelList => ({
    object: 'list',
    data: catalog.models.filter((model) => model.status === 'live' && mayUseModel(identity, model.id)).map(viewOf),
  })

  return new Elysia({ name: 'models', normalize: false })
    .derive(apiKeyAuth(auth, 'models.read'))
    .get('/v1/models', ({ identity }) => listFor(identity))
    .get('/v1/models/*', ({ params, identity }) => {
      let id: string
      try {
        id = decodeURIComponent(params['*'])
      } catch {
        throw new GatewayError('invalid_request', 'The model id in the path is not valid percent-encoding.', 'model')
      }
      const model = catalog.find(id)
      if (!model) throw new GatewayError('not_found', `The model '${id}' does not exist or is not in your catalog.`, 'model')
      return viewOf(resolveModel(catalog, id, model.modality, identity))
    })
}
