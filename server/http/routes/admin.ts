import { Elysia } from 'elysia'
import type { ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'

export const adminRouteTable: RouteTable = []

/** The platform operators' API under /v1/admin/*. */
export function adminRoutes(_deps: ManagementDeps) {
  return new Elysia({ normalize: false })
}
