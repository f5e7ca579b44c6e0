import type { ModelObject, Nilegate, RequestOptions } from '../../lib/sdk'

/**
 * The catalog as a signed-in person may read it: the models their organization may use
 * (GET /v1/organization/models). /v1/models itself takes API keys only.
 */
export async function listOrganizationModels(client: Nilegate, options: RequestOptions = {}): Promise<ModelObject[]> {
  return (await client.organization.models.list(options)).data
}

/** One model of the organization's catalog (GET /v1/organization/models/{id}). */
export function retrieveOrganizationModel(client: Nilegate, id: string, options: RequestOptions = {}): Promise<ModelObject> {
  return client.organization.models.retrieve(id, options)
}

/** Operators: the whole catalog, retired models included (GET /v1/admin/models). */
export async function listAllModels(client: Nilegate, options: RequestOptions = {}): Promise<ModelObject[]> {
  return (await client.admin.models.list(options)).data
}
