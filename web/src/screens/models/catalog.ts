import type { ModelList, ModelObject, Nilegate, RequestOptions } from '../../lib/sdk'

/**
 * The catalog as a signed-in person may read it: the models their organization may use
 * (GET /v1/organization/models). /v1/models itself takes API keys only.
 */
export async function listOrganizationModels(client: Nilegate, options: RequestOptions = {}): Promise<ModelObject[]> {
  const models = (client.organization as unknown as { models?: { list(options?: RequestOptions): Promise<ModelList> } }).models
  if (!models) throw new Error('This gateway does not offer its model catalog to signed-in sessions yet.')
  return (await models.list(options)).data
}

/** One model of the organization's catalog (GET /v1/organization/models/{id}). */
export async function retrieveOrganizationModel(client: Nilegate, id: string, options: RequestOptions = {}): Promise<ModelObject> {
  const models = (client.organization as unknown as { models?: { retrieve(id: string, options?: RequestOptions): Promise<ModelObject> } }).models
  if (!models) throw new Error('This gateway does not offer its model catalog to signed-in sessions yet.')
  return models.retrieve(id, options)
}

/** Operators: the whole catalog, retired models included (GET /v1/admin/models). */
export async function listAllModels(client: Nilegate, options: RequestOptions = {}): Promise<ModelObject[]> {
  const admin = client.admin.models as unknown as { list?: (options?: RequestOptions) => Promise<ModelList> }
  if (!admin.list) throw new Error('This gateway does not list its whole catalog to operators yet.')
  return (await admin.list.call(client.admin.models, options)).data
}
