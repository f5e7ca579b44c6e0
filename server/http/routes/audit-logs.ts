import { Elysia } from 'elysia'
import type { ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'

export const auditLogRouteTable: RouteTable = []

/** GET /v1/organization/audit_logs. */
export function auditLogRoutes(_deps: ManagementDeps) {
  return new Elysia({ normalize: false })
}
