import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import type { CreditTransactionRecord } from '../../core/governance/operator'
import { formatEgp } from '../../core/money'
import { operatorAccess, type ManagementDeps } from '../management'
import { ListQuery, listObject, pageQuery } from '../management-fields'
import type { RouteTable } from '../plugins/error-handler'
import { auditLogObject, parseAuditLogQuery } from './audit-logs'

export const adminOrganizationRecordRouteTable: RouteTable = [
  // POST (a top-up) is in admin.ts.
  { pattern: /^\/v1\/admin\/organizations\/[^/]+\/credits\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/admin\/organizations\/[^/]+\/audit_logs\/?$/, methods: ['GET'] },
]

/** A row of an organization's credit ledger as operators read it; `actor` is who added it, by the audit trail. */
function creditTransactionObject(credit: CreditTransactionRecord) {
  return {
    object: 'organization.credit' as const,
    id: credit.id,
    organization_id: credit.orgId,
    kind: credit.kind,
    amount_egp: formatEgp(credit.amountMicros),
    note: credit.note,
    actor: credit.actor,
    created_at: credit.createdAt,
  }
}

function organizationNotFound(orgId: string): GatewayError {
  return new GatewayError('not_found', `No organization '${orgId}'.`, 'id')
}

/**
 * What operators read of one organization they need not belong to: its credit ledger (top-ups
 * first of all) and its audit trail, both newest first.
 */
export function adminOrganizationRecordRoutes(deps: ManagementDeps) {
  return new Elysia({ normalize: false })
    .use(operatorAccess(deps))
    .get(
      '/v1/admin/organizations/:id/credits',
      async ({ params, query }) => {
        const page = await deps.governance.operator.listCredits({ orgId: params.id, ...pageQuery(query) })
        if (!page) throw organizationNotFound(params.id)
        return listObject(page, page.items.map(creditTransactionObject))
      },
      { query: ListQuery },
    )
    .get('/v1/admin/organizations/:id/audit_logs', async ({ params, request }) => {
      // The query is checked first, so that a bad filter is 400 whether or not the organization exists.
      const query = parseAuditLogQuery(new URL(request.url).searchParams, params.id)
      if (!(await deps.governance.organizations.getOrganization(params.id))) throw organizationNotFound(params.id)
      const { records, hasMore } = await deps.governance.audit.listAuditLogs(query)
      return listObject({ hasMore }, records.map(auditLogObject))
    })
}
