import { callOptions, unwrap, type DataOf, type GatewayApi, type RequestOptions, type Routes } from '../api'

type UsageRoutes = Routes['organization']['usage']

/** One page of usage buckets: tokens, requests and cost (EGP) per day or hour of the billing time zone. */
export type UsagePage = DataOf<UsageRoutes['get']>
/** One day or hour of usage, with a result per group. */
export type UsageBucket = UsagePage['data'][number]
/** The balance with month-to-date spend per project and key against their caps. */
export type Balance = DataOf<Routes['organization']['balance']['get']>

/** Which usage to count, and how to group it. */
export interface UsageParams {
  /** Unix seconds, inclusive. */
  start_time: number
  /** Unix seconds, exclusive; now by default. */
  end_time?: number
  bucket_width?: '1d' | '1h'
  group_by?: Array<'project_id' | 'api_key_id' | 'model'>
  project_ids?: string[]
  api_key_ids?: string[]
  models?: string[]
  /** Buckets per page: up to 31 days or 168 hours. */
  limit?: number
  /** A previous page's `next_page`. */
  page?: string
  /** One endpoint's usage only. */
  endpoint?: 'completions' | 'embeddings'
}

/** Usage of the selected organization: GET /v1/organization/usage[/completions|/embeddings]. */
export class OrganizationUsage {
  constructor(private readonly api: GatewayApi) {}

  /** Every bucket from `start_time` on, page by page as the loop goes. */
  async *list(params: UsageParams): AsyncGenerator<UsageBucket, void, undefined> {
    let page = params.page
    for (;;) {
      const current = await this.page({ ...params, page })
      yield* current.data
      if (!current.has_more || current.next_page === null) return
      page = current.next_page
    }
  }

  /** One page of buckets. */
  page(params: UsageParams, options?: RequestOptions): Promise<UsagePage> {
    const { endpoint, ...query } = params
    const usage = this.api.v1.organization.usage
    const route = endpoint === undefined ? usage : usage[endpoint]
    return unwrap(route.get({ query, ...callOptions(options) }))
  }
}

/** GET /v1/organization/balance. */
export class OrganizationBalance {
  constructor(private readonly api: GatewayApi) {}

  /** The balance, what is available now, and this month's spend per project and key. */
  retrieve(options?: RequestOptions): Promise<Balance> {
    return unwrap(this.api.v1.organization.balance.get(callOptions(options)))
  }
}
