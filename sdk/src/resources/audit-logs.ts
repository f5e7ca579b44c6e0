import { callOptions, unwrap, type DataOf, type GatewayApi, type RequestOptions, type Routes } from '../api'
import { paginate, type ListPage, type ListParams } from '../pagination'

/** One record of the audit trail: actor, action (`type`), target, changes, IP and request id. */
export type AuditLog = DataOf<Routes['organization']['audit_logs']['get']>['data'][number]

/** Which records to list, newest first. */
export interface AuditLogListParams extends ListParams {
  actor_ids?: string[]
  /** Actions such as `project.created` (OpenAI's `event_types`). */
  actions?: string[]
  target_ids?: string[]
  project_ids?: string[]
  /** Bounds on `effective_at`, in Unix seconds. */
  effective_at?: { gt?: number; gte?: number; lt?: number; lte?: number }
}

/** The audit trail of the selected organization: GET /v1/organization/audit_logs (owners and admins). */
export class AuditLogs {
  constructor(private readonly api: GatewayApi) {}

  /** Every matching record, newest first, page by page as the loop goes. */
  list(params: AuditLogListParams = {}): AsyncGenerator<AuditLog, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of records. */
  page(params: AuditLogListParams = {}, options?: RequestOptions): Promise<ListPage<AuditLog>> {
    return unwrap(this.api.v1.organization.audit_logs.get({ query: auditLogQuery(params), ...callOptions(options) }))
  }
}

/** The query string of an audit trail's page. */
export function auditLogQuery(params: AuditLogListParams): Record<string, string | string[] | undefined> {
  const { effective_at: bounds = {}, limit, ...filters } = params
  const query: Record<string, string | string[] | undefined> = { ...filters, limit: limit === undefined ? undefined : String(limit) }
  for (const [bound, seconds] of Object.entries(bounds)) query[`effective_at[${bound}]`] = String(seconds)
  return query
}
