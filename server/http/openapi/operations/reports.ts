import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import type { Operation, QueryParameter } from '../operation'
import { AuditLogList, Balance, UsagePage } from '../responses/reports'

const ids = t.Array(t.String())
const timeBounds = { gt: 'after', gte: 'at or after', lt: 'before', lte: 'at or before' }

/** The filters and paging of an organization's audit trail. */
export const auditLogQuery: readonly QueryParameter[] = [
  { name: 'actor_ids', description: 'Records by these actors (user, key or operator ids). Also as `actor_ids[]`.', schema: ids },
  { name: 'actions', description: 'Records of these actions, like `api_key.created`. Also as `actions[]`, `event_types` or `event_types[]`.', schema: ids },
  { name: 'target_ids', description: 'Records about these targets. Also as `target_ids[]`, `resource_ids` or `resource_ids[]`.', schema: ids },
  { name: 'project_ids', description: 'Records of these projects. Also as `project_ids[]`.', schema: ids },
  ...Object.entries(timeBounds).map(([bound, relation]) => ({ name: `effective_at[${bound}]`, description: `Records made ${relation} these Unix seconds.`, schema: Type.Integer({ minimum: 0 }) })),
  { name: 'limit', description: 'Records per page.', schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }) },
  { name: 'after', description: 'A record id: the page of older records after it.', schema: t.String() },
  { name: 'before', description: 'A record id: the page of newer records before it. Not with `after`.', schema: t.String() },
]

const usageQuery: readonly QueryParameter[] = [
  { name: 'start_time', description: 'Unix seconds; the first bucket holds it.', schema: Type.Integer({ minimum: 0 }), required: true },
  { name: 'end_time', description: 'Unix seconds, exclusive; now when absent.', schema: Type.Integer({ minimum: 1 }) },
  { name: 'bucket_width', description: 'Days or hours of the billing time zone.', schema: t.Union([t.Literal('1d'), t.Literal('1h')], { default: '1d' }) },
  { name: 'limit', description: 'Buckets per page: up to 31 days (7 by default) or 168 hours (24 by default).', schema: Type.Integer({ minimum: 1, maximum: 168 }) },
  { name: 'page', description: 'The `next_page` of the previous answer.', schema: t.String() },
  { name: 'group_by', description: 'Split each bucket by these fields. Also as `group_by[]`.', schema: t.Array(t.Union([t.Literal('project_id'), t.Literal('api_key_id'), t.Literal('model')])) },
  { name: 'project_ids', description: 'Only these projects. Also as `project_ids[]`.', schema: ids },
  { name: 'api_key_ids', description: 'Only these keys. Also as `api_key_ids[]`.', schema: ids },
  { name: 'models', description: 'Only these models. Also as `models[]`.', schema: ids },
]

function usageOperation(operationId: string, what: string) {
  return {
    operationId,
    summary: `Usage of ${what}`,
    description: 'Tokens, requests and cost from the ledger, in buckets of the billing time zone. `OpenAI-Project` narrows it to one project.',
    tag: 'Usage',
    access: 'member',
    response: UsagePage,
    query: usageQuery,
    errors: ['invalid_request', 'not_found'],
  } as const satisfies Operation
}

/** The audit trail, usage and the balance of the selected organization. */
export const reportOperations = {
  'GET /v1/organization/audit_logs': {
    operationId: 'listAuditLogs',
    summary: 'List audit log records',
    description:
      "Every change, login and denied key use, newest first; owners and admins only. A member's logins and failed logins (`login.succeeded`, `login.failed`, with `ip_address` and, in `changes.after`, the `user_agent` and a failure's `reason`) appear in each organization the member belongs to, from when they belong to it. Unknown query parameters are refused.",
    tag: 'Audit logs',
    access: 'member',
    response: AuditLogList,
    query: auditLogQuery,
    errors: ['invalid_request'],
  },
  'GET /v1/organization/usage': usageOperation('getUsage', 'every endpoint'),
  'GET /v1/organization/usage/completions': usageOperation('getCompletionsUsage', 'chat completions'),
  'GET /v1/organization/usage/embeddings': usageOperation('getEmbeddingsUsage', 'embeddings'),
  'GET /v1/organization/balance': {
    operationId: 'getBalance',
    summary: 'The balance and month-to-date spend',
    description: 'Per project and key, against their monthly caps. `OpenAI-Project` narrows it to one project.',
    tag: 'Usage',
    access: 'member',
    response: Balance,
    errors: ['not_found'],
  },
} as const satisfies Record<string, Operation>
