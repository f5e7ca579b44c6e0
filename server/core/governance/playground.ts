import type { ApiKeyIdentity } from '../ports'
import type { OrganizationRecord } from './organizations'
import type { ProjectRecord } from './projects'

/**
 * The identity a dashboard user's playground request runs under: the selected project's limits
 * and the organization's, like one of its keys, with no key limits of its own. Its key id names the
 * user, so the usage and audit trails say who spent what.
 */
export function playgroundIdentity(organization: OrganizationRecord, project: ProjectRecord, userId: string): ApiKeyIdentity {
  return {
    keyId: `playground:${userId}`,
    orgId: organization.id,
    projectId: project.id,
    revokedAt: null,
    expiresAt: null,
    scopes: ['chat.completions'],
    rpmLimit: null,
    orgStatus: organization.status,
    planTier: organization.planTier,
    orgRpmCeiling: organization.customRpmCeiling,
    projectRpmOverride: project.rpmOverride,
    keyMonthlyCapMicros: null,
    projectMonthlyCapMicros: project.monthlySpendCapMicros,
    billingTimeZone: organization.billingTimeZone,
    requiresRegion: organization.requiresRegion,
    ipAllowList: [],
    orgAllowedModels: organization.allowedModels,
    projectEnabledModels: project.enabledModels,
    projectArchivedAt: project.archivedAt === null ? null : project.archivedAt * 1000,
  }
}
