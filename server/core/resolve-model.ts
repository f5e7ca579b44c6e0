import { GatewayError } from '@nilegate/shared/errors'
import type { Catalog, CatalogModel } from './catalog'
import type { ApiKeyIdentity } from './ports'

/** What decides which models a key may call: its organization's allow-list and its project's. */
export type ModelAccess = Pick<ApiKeyIdentity, 'projectId' | 'orgAllowedModels' | 'projectEnabledModels'>

/** Whether a key may call `modelId`: what `GET /v1/models` filters with, building no error. */
export function mayUseModel(access: ModelAccess, modelId: string): boolean {
  return (access.orgAllowedModels === null || access.orgAllowedModels.includes(modelId)) && (access.projectEnabledModels === null || access.projectEnabledModels.includes(modelId))
}

/** Why a key may not call `modelId`, or null when it may. */
export function modelAccessError(access: ModelAccess, modelId: string): GatewayError | null {
  if (mayUseModel(access, modelId)) return null
  if (access.orgAllowedModels !== null && !access.orgAllowedModels.includes(modelId)) {
    return new GatewayError('model_not_available', `The model '${modelId}' is not on your organization's model allow-list. GET /v1/models lists the models this key can use.`, 'model')
  }
  return new GatewayError('model_not_enabled_for_project', `The model '${modelId}' is not enabled for the project '${access.projectId}'. GET /v1/models lists the models this key can use.`, 'model')
}

/**
 * Finds the model a request names and checks, in the order of DESIGN.md section 2, that it is
 * live, that the key's organization and project allow it, and that it serves this endpoint.
 */
export function resolveModel(catalog: Catalog, id: string, modality: CatalogModel['modality'], access: ModelAccess): CatalogModel {
  const model = catalog.find(id)
  if (!model) throw new GatewayError('model_not_found', `The model '${id}' does not exist or is not in your catalog. GET /v1/models lists the models you can use.`, 'model')
  if (model.status === 'retired') {
    const replacement = model.replacement ? ` Use '${model.replacement}' instead.` : ''
    throw new GatewayError('model_sunset', `The model '${id}' was retired${model.retiresOn ? ` on ${model.retiresOn}` : ''}.${replacement}`, 'model')
  }
  const denied = modelAccessError(access, model.id)
  if (denied) throw denied
  if (model.modality !== modality) {
    const endpoint = modality === 'chat' ? '/v1/chat/completions' : '/v1/embeddings'
    throw new GatewayError('model_not_supported_on_endpoint', `The model '${id}' is ${model.modality === 'chat' ? 'a chat' : 'an embeddings'} model and does not support ${endpoint}.`, 'model')
  }
  return model
}
