import { callOptions, unwrap, type DataOf, type GatewayApi, type RequestOptions, type Routes } from '../api'

/** GET /v1/changelog: every model retirement, scheduled or done. */
export type ModelRetirementList = DataOf<Routes['changelog']['get']>
/** One retirement: the model, `scheduled` or `retired`, the date it stops answering and its replacement. */
export type ModelRetirement = ModelRetirementList['data'][number]

/** GET /v1/changelog: public, like a status page, so it needs no key. */
export class Changelog {
  constructor(private readonly api: GatewayApi) {}

  /** Every model retirement, scheduled or done, newest date first, with the model that replaces it. */
  list(options?: RequestOptions): Promise<ModelRetirementList> {
    return unwrap(this.api.v1.changelog.get(callOptions(options)))
  }
}
