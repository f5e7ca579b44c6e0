import { and, eq } from 'drizzle-orm'
import type { ProjectStore } from '../../../core/governance/projects'
import type { Drizzle } from '../drizzle'
import { projects } from '../schema'

export function createProjectRepository(db: Drizzle): ProjectStore {
  return {
    async projectBelongsTo(orgId, projectId) {
      const rows = await db.select({ id: projects.id }).from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId))).limit(1)
      return rows.length > 0
    },
  }
}
