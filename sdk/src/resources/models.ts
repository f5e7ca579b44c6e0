import type { ModelList, ModelObject } from '@nilegate/shared/schemas/models'
import { callOptions, segment, unwrap, type GatewayApi, type RequestOptions } from '../api'

/** GET /v1/models and GET /v1/models/{model}. */
export class Models {
  constructor(private readonly api: GatewayApi) {}

  /** The live models this API key may call, with their prices and limits. */
  list(options?: RequestOptions): Promise<ModelList> {
    return unwrap(this.api.v1.models.get(callOptions(options)))
  }

  /** One model by id; ids contain '/', which the client encodes. */
  retrieve(id: string, options?: RequestOptions): Promise<ModelObject> {
    // The route is a wildcard: its one segment is the encoded id.
    return unwrap(this.api.v1.models[segment(id) as '*'].get(callOptions(options)))
  }
}
