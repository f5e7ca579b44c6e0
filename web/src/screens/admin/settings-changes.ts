/** An operator's edit of an organization's plan and limits: the form's values, and what of them to send. */

import type { AdminOrganization, AdminOrganizationUpdateParams } from '../../lib/sdk'

export const planTiers = ['free', 'developer', 'team', 'enterprise'] as const
type PlanTier = (typeof planTiers)[number]
export const maxRpm = 2_147_483_647

/** The settings form's values, as typed. */
export type SettingsValues = {
  plan_tier: string
  rpm: string
  /** 'plan': every model the plan offers; 'list': only `allowed`. */
  allow: string
  allowed: string[]
  region: string
}

/** The form's values for the organization as it is. */
export function valuesOf(organization: AdminOrganization): SettingsValues {
  return {
    plan_tier: organization.plan_tier,
    rpm: organization.custom_rpm_ceiling === null ? '' : String(organization.custom_rpm_ceiling),
    allow: organization.allowed_models === null ? 'plan' : 'list',
    allowed: organization.allowed_models ?? [],
    region: organization.requires_region ?? '',
  }
}

/** The settings that differ from the organization's: only those are sent. */
export function settingsChanges(organization: AdminOrganization, values: SettingsValues): AdminOrganizationUpdateParams {
  const changes: AdminOrganizationUpdateParams = {}
  if (values.plan_tier !== organization.plan_tier) changes.plan_tier = values.plan_tier as PlanTier
  const rpm = values.rpm.trim() === '' ? null : Number(values.rpm)
  if (rpm !== organization.custom_rpm_ceiling) changes.custom_rpm_ceiling = rpm
  const allowed = values.allow === 'plan' ? null : [...values.allowed].sort()
  const before = organization.allowed_models === null ? null : [...organization.allowed_models].sort()
  if (JSON.stringify(allowed) !== JSON.stringify(before)) changes.allowed_models = allowed
  const region = values.region === '' ? null : values.region
  if (region !== organization.requires_region) changes.requires_region = region
  return changes
}
