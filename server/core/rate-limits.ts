import type { ApiKeyIdentity } from './ports'

/** RPM ceiling of each plan tier (DESIGN.md section 9). */
export const planRpmCeilings: Record<ApiKeyIdentity['planTier'], number> = { free: 20, developer: 500, team: 3_000, enterprise: 10_000 }

/**
 * The effective RPM limit of a key: the strictest of the organization's ceiling (its custom ceiling
 * when one was granted, else its plan tier's), the project override and the key's own limit.
 */
export function effectiveRpmLimit(identity: ApiKeyIdentity): number {
  let limit = identity.orgRpmCeiling ?? planRpmCeilings[identity.planTier]
  for (const candidate of [identity.projectRpmOverride, identity.rpmLimit]) {
    if (candidate !== null && candidate < limit) limit = candidate
  }
  return limit
}
