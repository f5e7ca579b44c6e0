import { eq, sql } from 'drizzle-orm'
import type { ApiKeyIdentity, IdentityStore } from '../../core/ports'
import type { Drizzle } from './drizzle'
import { apiKeys, organizations, projects } from './schema'

/** API key lookups for authentication: one indexed query joining the key with its organization and project. */
export function createIdentityRepository(db: Drizzle): IdentityStore {
  const findByHash = db
    .select({
      keyId: apiKeys.id,
      orgId: apiKeys.orgId,
      projectId: apiKeys.projectId,
      revokedAt: apiKeys.revokedAt,
      expiresAt: apiKeys.expiresAt,
      scopes: apiKeys.scopes,
      rpmLimit: apiKeys.rpmLimit,
      orgStatus: organizations.status,
      planTier: organizations.planTier,
      orgRpmCeiling: organizations.customRpmCeiling,
      projectRpmOverride: projects.rpmOverride,
      keyMonthlyCapMicros: apiKeys.monthlySpendCapMicros,
      projectMonthlyCapMicros: projects.monthlySpendCapMicros,
      billingTimeZone: organizations.billingTimeZone,
      requiresRegion: organizations.requiresRegion,
      ipAllowList: apiKeys.ipAllowList,
      orgAllowedModels: organizations.allowedModels,
      projectEnabledModels: projects.enabledModels,
      projectArchivedAt: projects.archivedAt,
    })
    .from(apiKeys)
    .innerJoin(organizations, eq(organizations.id, apiKeys.orgId))
    .innerJoin(projects, eq(projects.id, apiKeys.projectId))
    .where(eq(apiKeys.secretHash, sql.placeholder('hashHex')))
    .limit(1)
    .prepare('find_api_key_by_hash')

  return {
    async findApiKeyByHash(hashHex: string): Promise<ApiKeyIdentity | null> {
      const [row] = await findByHash.execute({ hashHex })
      if (!row) return null
      return { ...row, revokedAt: row.revokedAt?.getTime() ?? null, expiresAt: row.expiresAt?.getTime() ?? null, projectArchivedAt: row.projectArchivedAt?.getTime() ?? null }
    },
  }
}
