import type { ModelList, ModelObject } from '@nilegate/shared/schemas/models'
import { callOptions, segment, unwrap, type GatewayApi, type RequestOptions } from '../api'

/** GET /v1/organization/models: the catalog as a signed-in member reads it (a key reads /v1/models). */
export class OrganizationModels {
  constructor(private readonly api: GatewayApi) {}

  /** The models the organization may use (narrowed to the client's project, when it names one), retired ones included. */
  list(options?: RequestOptions): Promise<ModelList> {
    return unwrap(this.api.v1.organization.models.get(callOptions(options)))
  }

  /** One of them by id; ids contain '/', which the client encodes. */
  retrieve(id: string, options?: RequestOptions): Promise<ModelObject> {
    return unwrap(this.api.v1.organization.models[segment(id) as '*'].get(callOptions(options)))
  }
}
