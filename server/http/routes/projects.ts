import { Elysia } from 'elysia'
import type { ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'

export const projectRouteTable: RouteTable = []

/** Projects and their API keys under /v1/organization/projects. */
export function projectRoutes(_deps: ManagementDeps) {
  return new Elysia({ normalize: false })
}
