import { Elysia } from 'elysia'
import type { ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'

export const authRouteTable: RouteTable = []

/** Accounts and sessions under /v1/auth/*. */
export function authRoutes(_deps: ManagementDeps) {
  return new Elysia({ normalize: false })
}
