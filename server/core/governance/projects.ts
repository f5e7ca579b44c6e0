export interface ProjectStore {
  /** Whether the project exists in the organization (archived or not). */
  projectBelongsTo(orgId: string, projectId: string): Promise<boolean>
}
