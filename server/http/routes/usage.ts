import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { billingMonth } from '../../core/admission'
import type { BucketWidth, UsageGroupField, UsageQuery, UsageTotals } from '../../core/governance/usage'
import { formatEgp } from '../../core/money'
import { authorize, orgAccess, type ManagementDeps, type OrgScope } from '../management'
import type { RouteTable } from '../plugins/error-handler'
import { queryInteger, queryList } from '../query'

export const usageRouteTable: RouteTable = [
  { pattern: /^\/v1\/organization\/usage(\/(completions|embeddings))?\/?$/, methods: ['GET'] },
  { pattern: /^\/v1\/organization\/balance\/?$/, methods: ['GET'] },
]

const bucketLimits: Record<BucketWidth, { fallback: number; max: number }> = { '1d': { fallback: 7, max: 31 }, '1h': { fallback: 24, max: 168 } }
const groupFields: readonly UsageGroupField[] = ['project_id', 'api_key_id', 'model']
const endpoints = {
  all: { endpoint: null, object: 'organization.usage.result' },
  completions: { endpoint: 'chat.completions', object: 'organization.usage.completions.result' },
  embeddings: { endpoint: 'embeddings', object: 'organization.usage.embeddings.result' },
} as const

/** The organization's billing time zone: day buckets and months are counted in it. */
async function timeZoneOf(deps: ManagementDeps, orgId: string): Promise<string> {
  const organization = await deps.governance.organizations.getOrganization(orgId)
  if (!organization) throw new GatewayError('not_found', 'The organization no longer exists.')
  return organization.billingTimeZone
}

/** The projects a query may see: those asked for, narrowed to the `OpenAI-Project` one when it is set. */
function projectFilter(org: OrgScope, asked: string[] | null): string[] | null {
  if (org.projectId === null) return asked
  return asked === null ? [org.projectId] : asked.filter((id) => id === org.projectId)
}

function parseUsageQuery(url: URL, org: OrgScope, timeZone: string, endpoint: UsageQuery['endpoint'], nowS: number): UsageQuery {
  const params = url.searchParams
  const startTime = queryInteger(params, 'start_time', { min: 0, max: 253_402_300_799 })
  if (startTime === null) throw new GatewayError('invalid_request', 'start_time (Unix seconds) is required.', 'start_time')
  const endTime = queryInteger(params, 'end_time', { min: startTime + 1, max: 253_402_300_800 }, Math.max(nowS, startTime + 1))
  const width = params.get('bucket_width') ?? '1d'
  if (width !== '1d' && width !== '1h') throw new GatewayError('invalid_request', "bucket_width must be '1d' or '1h'.", 'bucket_width')
  const limits = bucketLimits[width]
  const page = queryInteger(params, 'page', { min: startTime, max: endTime - 1 })
  const groupBy = queryList(params, 'group_by') ?? []
  const unknown = groupBy.find((field) => !groupFields.includes(field as UsageGroupField))
  if (unknown !== undefined) throw new GatewayError('invalid_request', `group_by may hold ${groupFields.join(', ')}; '${unknown}' is not one of them.`, 'group_by')
  return {
    orgId: org.orgId,
    timeZone,
    startTime: page ?? startTime,
    endTime,
    bucketWidth: width,
    limit: queryInteger(params, 'limit', { min: 1, max: limits.max }, limits.fallback),
    groupBy: groupBy as UsageGroupField[],
    endpoint,
    projectIds: projectFilter(org, queryList(params, 'project_ids')),
    apiKeyIds: queryList(params, 'api_key_ids'),
    models: queryList(params, 'models'),
  }
}

function resultObject(object: string, totals: UsageTotals) {
  return {
    object,
    input_tokens: totals.inputTokens,
    output_tokens: totals.outputTokens,
    num_model_requests: totals.requests,
    cost_egp: formatEgp(totals.costMicros),
    project_id: totals.projectId,
    api_key_id: totals.apiKeyId,
    model: totals.model,
  }
}

/**
 * Usage and cost of the selected organization from the ledger (usage rows), in OpenAI's usage page
 * shape: `GET /v1/organization/usage` (every endpoint), `/usage/completions` and `/usage/embeddings`;
 * and `GET /v1/organization/balance`, the balance with month-to-date spend per project and key
 * against their caps. Every role may read; `OpenAI-Project` narrows both to one project.
 */
export function usageRoutes(deps: ManagementDeps) {
  const nowMs = deps.now ?? Date.now
  const usagePage = async (request: Request, org: OrgScope, kind: keyof typeof endpoints) => {
    authorize(org, 'usage.read')
    const query = parseUsageQuery(new URL(request.url), org, await timeZoneOf(deps, org.orgId), endpoints[kind].endpoint, Math.floor(nowMs() / 1000))
    const { buckets, hasMore, rawFrom } = query.projectIds?.length === 0 ? { buckets: [], hasMore: false, rawFrom: null } : await deps.governance.usage.usageBuckets(query)
    return {
      object: 'page' as const,
      data: buckets.map((bucket) => ({
        object: 'bucket' as const,
        start_time: bucket.startTime,
        end_time: bucket.endTime,
        results: bucket.results.map((totals) => resultObject(endpoints[kind].object, totals)),
      })),
      has_more: hasMore,
      next_page: hasMore && buckets.length > 0 ? String(buckets.at(-1)!.endTime) : null,
      raw_usage_from: rawFrom,
    }
  }
  return new Elysia({ normalize: false })
    .use(orgAccess(deps))
    .get('/v1/organization/usage', ({ request, org }) => usagePage(request, org, 'all'))
    .get('/v1/organization/usage/completions', ({ request, org }) => usagePage(request, org, 'completions'))
    .get('/v1/organization/usage/embeddings', ({ request, org }) => usagePage(request, org, 'embeddings'))
    .get('/v1/organization/balance', async ({ org }) => {
      authorize(org, 'usage.read')
      const timeZone = await timeZoneOf(deps, org.orgId)
      const atMs = nowMs()
      const month = billingMonth(atMs, timeZone)
      const counters = await deps.ledger.readCounters(org.orgId, month, timeZone)
      const summary = await deps.governance.usage.spendSummary(org.orgId, org.projectId, { projects: new Map(counters.projectSpend), keys: new Map(counters.keySpend) })
      const live = await deps.admission.snapshot(org.orgId, month, atMs)
      const spendLine = (line: (typeof summary.projects)[number]) => ({
        id: line.id,
        name: line.name,
        ...(line.projectId !== line.id ? { project_id: line.projectId } : {}),
        month_to_date_spend_egp: formatEgp(line.spendMicros),
        monthly_spend_cap_egp: line.capMicros === null ? null : formatEgp(line.capMicros),
      })
      let monthToDate = 0n
      for (const spend of counters.projectSpend.values()) monthToDate += spend
      return {
        object: 'organization.balance' as const,
        organization_id: org.orgId,
        // The ledger's balance (credits minus recorded usage); `available_egp` also takes off what
        // requests running now hold (a dead gateway's holds no longer from their expiry on, released
        // or not) and what was settled a moment ago but not yet recorded.
        balance_egp: formatEgp(counters.balanceMicros),
        available_egp: live ? formatEgp(live.balanceMicros - live.heldMicros) : formatEgp(counters.balanceMicros),
        month: `${month.slice(0, 4)}-${month.slice(4)}`,
        billing_time_zone: timeZone,
        month_to_date_spend_egp: formatEgp(monthToDate),
        projects: summary.projects.map(spendLine),
        api_keys: summary.apiKeys.map(spendLine),
      }
    })
}
