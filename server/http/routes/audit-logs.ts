import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import type { AuditLogQuery, AuditLogRecord } from '../../core/governance/audit'
import { authorize, orgAccess, type ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'
import { queryInteger, queryList } from '../query'

export const auditLogRouteTable: RouteTable = [{ pattern: /^\/v1\/organization\/audit_logs\/?$/, methods: ['GET'] }]

/** A record of the audit trail as the API shows it; `type` is the action, `effective_at` unix seconds. */
export function auditLogObject(record: AuditLogRecord) {
  return {
    object: 'organization.audit_log' as const,
    id: record.id,
    type: record.action,
    effective_at: record.createdAt,
    actor: record.actor,
    target: record.target,
    project_id: record.projectId,
    changes: record.changes,
    ip_address: record.ip,
    request_id: record.requestId,
  }
}

/**
 * The list filters, by every name clients use for them: ours, then OpenAI's (`event_types`,
 * `resource_ids`). Each takes `name[]=a&name[]=b` (the OpenAI SDKs) or `name=a&name=b`.
 */
const filterParams = {
  actorIds: ['actor_ids'],
  actions: ['actions', 'event_types'],
  targetIds: ['target_ids', 'resource_ids'],
  projectIds: ['project_ids'],
} as const satisfies Partial<Record<keyof AuditLogQuery, readonly string[]>>

const bounds = ['gt', 'gte', 'lt', 'lte'] as const
const knownParams = new Set([
  ...Object.values(filterParams).flatMap((names) => names.flatMap((name) => [name, `${name}[]`])),
  ...bounds.map((bound) => `effective_at[${bound}]`),
  'limit',
  'after',
  'before',
])

/**
 * GET /v1/organization/audit_logs's query string (and that of the operators' route for one
 * organization) as a store query for `orgId`. Unknown parameters
 * are refused rather than ignored, so a filter we do not offer (`actor_emails[]`, say) never
 * silently widens the answer.
 */
export function parseAuditLogQuery(params: URLSearchParams, orgId: string): AuditLogQuery {
  for (const name of params.keys()) {
    if (!knownParams.has(name)) {
      throw new GatewayError('invalid_request', `Unknown query parameter '${name}'. Filters: actor_ids[], actions[] (or event_types[]), target_ids[] (or resource_ids[]), project_ids[], effective_at[gt|gte|lt|lte]; paging: limit, after, before.`, name)
    }
  }
  const query: AuditLogQuery = { orgId, limit: queryInteger(params, 'limit', { min: 1, max: 100 }, 20) }
  for (const [field, names] of Object.entries(filterParams) as Array<[keyof typeof filterParams, readonly string[]]>) {
    const values = names.flatMap((name) => queryList(params, name) ?? [])
    if (values.length > 0) query[field] = values
  }
  const [gt, gte, lt, lte] = bounds.map((bound) => queryInteger(params, `effective_at[${bound}]`, { min: 0, max: Number.MAX_SAFE_INTEGER }) ?? undefined)
  // Every bound becomes an inclusive one, in whole seconds as effective_at counts them.
  const since = Math.max(gte ?? -Infinity, (gt ?? -Infinity) + 1)
  const until = Math.min(lte ?? Infinity, (lt ?? Infinity) - 1)
  if (since > -Infinity) query.since = since
  if (until < Infinity) query.until = until
  const after = params.get('after') || null
  const before = params.get('before') || null
  if (after !== null && before !== null) throw new GatewayError('invalid_request', 'Pass either after or before, not both.', 'before')
  if (after !== null) query.cursor = { after }
  if (before !== null) query.cursor = { before }
  return query
}

/** GET /v1/organization/audit_logs: the selected organization's audit trail, newest first; owners and admins only. */
export function auditLogRoutes(deps: ManagementDeps) {
  return new Elysia({ normalize: false }).use(orgAccess(deps)).get('/v1/organization/audit_logs', async ({ org, request }) => {
    authorize(org, 'audit_logs.read')
    const { records, hasMore } = await deps.governance.audit.listAuditLogs(parseAuditLogQuery(new URL(request.url).searchParams, org.orgId))
    const data = records.map(auditLogObject)
    return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore }
  })
}
