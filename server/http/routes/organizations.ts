import { Elysia, t } from 'elysia'
import type { OrganizationRecord } from '../../core/governance/organizations'
import { formatEgp } from '../../core/money'
import { idempotent } from '../idempotency'
import { sessionAuth, type ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'

export const organizationRouteTable: RouteTable = [{ pattern: /^\/v1\/organizations\/?$/, methods: ['GET', 'POST'] }]

/** An organization as the API shows it; money as EGP decimal strings. */
export function organizationObject(organization: OrganizationRecord, role: string | null) {
  return {
    object: 'organization' as const,
    id: organization.id,
    name: organization.name,
    plan_tier: organization.planTier,
    status: organization.status,
    custom_rpm_ceiling: organization.customRpmCeiling,
    allowed_models: organization.allowedModels,
    requires_region: organization.requiresRegion,
    billing_time_zone: organization.billingTimeZone,
    balance_egp: formatEgp(organization.balanceMicros),
    role,
    created_at: organization.createdAt,
  }
}

const CreateOrganization = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })

/** The caller's organizations, and creating one (the creator becomes its owner). */
export function organizationRoutes(deps: ManagementDeps) {
  return new Elysia({ normalize: false })
    .use(sessionAuth(deps))
    .post(
      '/v1/organizations',
      ({ body, principal, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const organization = await deps.governance.organizations.createOrganization({ name: body.name.trim(), ownerUserId: principal.user.id }, principal.actor)
          set.status = 201
          return organizationObject(organization, 'owner')
        }),
      { body: CreateOrganization },
    )
}
