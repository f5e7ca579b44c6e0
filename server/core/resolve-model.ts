import { GatewayError } from '@nilegate/shared/errors'
import type { Catalog, CatalogModel } from './catalog'

/** Finds the model a request names and checks that it can serve this endpoint. */
export function resolveModel(catalog: Catalog, id: string, modality: CatalogModel['modality']): CatalogModel {
  const model = catalog.find(id)
  if (!model) throw new GatewayError('model_not_found', `The model '${id}' does not exist or is not in your catalog. GET /v1/models lists the models you can use.`, 'model')
  if (model.status === 'retired') {
    const replacement = model.replacement ? ` Use '${model.replacement}' instead.` : ''
    throw new GatewayError('model_sunset', `The model '${id}' was retired${model.retiresOn ? ` on ${model.retiresOn}` : ''}.${replacement}`, 'model')
  }
  if (model.modality !== modality) {
    const endpoint = modality === 'chat' ? '/v1/chat/completions' : '/v1/embeddings'
    throw new GatewayError('model_not_supported_on_endpoint', `The model '${id}' is ${model.modality === 'chat' ? 'a chat' : 'an embeddings'} model and does not support ${endpoint}.`, 'model')
  }
  return model
}
