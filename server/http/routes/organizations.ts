import { Elysia, t } from 'elysia'
import { literalUnion } from '@nilegate/shared/schemas/common'
import { GatewayError } from '@nilegate/shared/errors'
import { hashApiKey } from '../../core/api-keys'
import { generateSecretToken, normalizeEmail } from '../../core/governance/accounts'
import {
  canonicalTimeZone,
  inviteLifetimeMs,
  inviteStatus,
  inviteTokenPrefix,
  invitationMail,
  requireMayGrant,
  type InviteRecord,
  type MemberRecord,
  type OrganizationRecord,
} from '../../core/governance/organizations'
import { membershipRoles } from '../../core/governance/roles'
import { formatEgp } from '../../core/money'
import { idempotent } from '../idempotency'
import { authorize, mailBaseUrl, orgAccess, requireVerifiedEmail, sessionAuth, type ManagementDeps, type OrgScope } from '../management'
import { ListQuery, listObject, pageQuery } from '../management-fields'
import type { RouteTable } from '../plugins/error-handler'

export const organizationRouteTable: RouteTable = [
  { pattern: /^\/v1\/organizations\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/organization\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/organization\/users\/?$/, methods: ['GET'] },
  { pattern: /^\/v1\/organization\/users\/[^/]+\/?$/, methods: ['GET', 'POST', 'DELETE'] },
  { pattern: /^\/v1\/organization\/invites\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/organization\/invites\/[^/]+\/?$/, methods: ['GET', 'DELETE'] },
  { pattern: /^\/v1\/invites\/accept\/?$/, methods: ['POST'] },
]

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

function memberObject(member: MemberRecord) {
  return { object: 'organization.user' as const, id: member.userId, name: member.name, email: member.email, role: member.role, added_at: member.addedAt }
}

function inviteObject(invite: InviteRecord, nowMs: number) {
  const seconds = (ms: number) => Math.floor(ms / 1000)
  return {
    object: 'organization.invite' as const,
    id: invite.id,
    email: invite.email,
    role: invite.role,
    status: inviteStatus(invite, nowMs),
    invited_at: seconds(invite.invitedAt),
    expires_at: seconds(invite.expiresAt),
    accepted_at: invite.acceptedAt === null ? null : seconds(invite.acceptedAt),
  }
}

const OrganizationName = t.String({ minLength: 1, maxLength: 200, pattern: '\\S', error: 'must be 1 to 200 characters, not only spaces' })
const Role = literalUnion(membershipRoles, { error: `must be one of ${membershipRoles.join(', ')}` })
const CreateOrganization = t.Object({ name: OrganizationName }, { additionalProperties: false })
const UpdateOrganization = t.Object({ name: t.Optional(OrganizationName), billing_time_zone: t.Optional(t.String()) }, { additionalProperties: false })
const UpdateMember = t.Object({ role: Role }, { additionalProperties: false })
const CreateInvite = t.Object({ email: t.String({ format: 'email', maxLength: 320, error: 'must be an e-mail address' }), role: Role }, { additionalProperties: false })
const AcceptInvite = t.Object({ token: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })

/** The caller's organizations, creating one (the creator becomes its owner), and accepting an invite. */
function accountOrganizationRoutes(deps: ManagementDeps) {
  const store = deps.governance.organizations
  return new Elysia({ normalize: false })
    .use(sessionAuth(deps))
    .get(
      '/v1/organizations',
      async ({ principal, query }) => {
        requireVerifiedEmail(principal)
        const page = await store.listMemberOrganizations(principal.user.id, pageQuery(query))
        return listObject(page, page.items.map(({ organization, role }) => organizationObject(organization, role)))
      },
      { query: ListQuery },
    )
    .post(
      '/v1/organizations',
      ({ body, principal, request, set }) => {
        requireVerifiedEmail(principal)
        return idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const organization = await store.createOrganization({ name: body.name.trim(), ownerUserId: principal.user.id }, principal.actor)
          set.status = 201
          return organizationObject(organization, 'owner')
        })
      },
      { body: CreateOrganization },
    )
    .post(
      '/v1/invites/accept',
      ({ body, principal, request, set }) => {
        requireVerifiedEmail(principal)
        return idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const joined = await store.acceptInvite({ tokenHash: hashApiKey(body.token), userId: principal.user.id, email: principal.user.email, nowMs: (deps.now ?? Date.now)() }, principal.actor)
          return organizationObject(joined.organization, joined.role)
        })
      },
      { body: AcceptInvite },
    )
}

/** The selected organization's own settings: GET and POST /v1/organization. */
function currentOrganizationRoutes(deps: ManagementDeps) {
  const store = deps.governance.organizations
  return new Elysia({ normalize: false })
    .use(orgAccess(deps))
    .get('/v1/organization', async ({ org }) => {
      authorize(org, 'organization.read')
      const organization = await store.getOrganization(org.orgId)
      if (!organization) throw new GatewayError('not_found', `No organization '${org.orgId}'.`)
      return organizationObject(organization, org.role)
    })
    .post(
      '/v1/organization',
      ({ body, org, principal, request, set }) => {
        authorize(org, 'organization.update')
        const billingTimeZone = body.billing_time_zone === undefined ? undefined : canonicalTimeZone(body.billing_time_zone)
        if (billingTimeZone === null) throw new GatewayError('invalid_request', `'${body.billing_time_zone}' is not an IANA time zone such as Africa/Cairo.`, 'billing_time_zone')
        return idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const organization = await store.updateOrganization(org.orgId, { name: body.name?.trim(), billingTimeZone }, principal.actor)
          // Monthly caps reset in the billing time zone, which the keys' cached identities carry.
          if (billingTimeZone !== undefined) await deps.changes.publish({ kind: 'organization', orgId: org.orgId })
          return organizationObject(organization, org.role)
        })
      },
      { body: UpdateOrganization },
    )
}

/** Members of the selected organization: /v1/organization/users. */
function memberRoutes(deps: ManagementDeps) {
  const store = deps.governance.organizations
  return new Elysia({ normalize: false })
    .use(orgAccess(deps))
    .get(
      '/v1/organization/users',
      async ({ org, query }) => {
        authorize(org, 'members.read')
        const page = await store.listMembers(org.orgId, pageQuery(query))
        return listObject(page, page.items.map(memberObject))
      },
      { query: ListQuery },
    )
    .get('/v1/organization/users/:user_id', async ({ org, params }) => {
      authorize(org, 'members.read')
      const member = await store.getMember(org.orgId, params.user_id)
      if (!member) throw new GatewayError('not_found', `No member '${params.user_id}' in this organization.`, 'user_id')
      return memberObject(member)
    })
    .post(
      '/v1/organization/users/:user_id',
      ({ body, org, params, principal, request, set }) => {
        authorize(org, 'members.manage')
        return idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () =>
          memberObject(await store.changeMemberRole({ orgId: org.orgId, userId: params.user_id, role: body.role, actorRole: org.role }, principal.actor)),
        )
      },
      { body: UpdateMember },
    )
    .delete('/v1/organization/users/:user_id', async ({ org, params, principal }) => {
      // Leaving is open to every member; removing someone else takes members.manage.
      if (params.user_id !== principal.user.id) authorize(org, 'members.manage')
      await store.removeMember({ orgId: org.orgId, userId: params.user_id, actorRole: org.role }, principal.actor)
      return { object: 'organization.user.deleted' as const, id: params.user_id, deleted: true }
    })
}

/** Invites of the selected organization: /v1/organization/invites. The token only ever travels by mail. */
function inviteRoutes(deps: ManagementDeps) {
  const store = deps.governance.organizations
  const now = deps.now ?? Date.now
  return new Elysia({ normalize: false })
    .use(orgAccess(deps))
    .get(
      '/v1/organization/invites',
      async ({ org, query }) => {
        authorize(org, 'members.read')
        const page = await store.listInvites(org.orgId, pageQuery(query))
        const nowMs = now()
        return listObject(page, page.items.map((invite) => inviteObject(invite, nowMs)))
      },
      { query: ListQuery },
    )
    .get('/v1/organization/invites/:invite_id', async ({ org, params }) => {
      authorize(org, 'members.read')
      const invite = await store.getInvite(org.orgId, params.invite_id)
      if (!invite) throw new GatewayError('not_found', `No invite '${params.invite_id}' in this organization.`, 'invite_id')
      return inviteObject(invite, now())
    })
    .post(
      '/v1/organization/invites',
      ({ body, org, principal, request, server, set }) => {
        authorize(org, 'members.manage')
        requireMayGrant(org.role, body.role)
        return idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const organization = await store.getOrganization(org.orgId)
          if (!organization) throw new GatewayError('not_found', `No organization '${org.orgId}'.`)
          const { secret, hashHex } = generateSecretToken(inviteTokenPrefix)
          const invitedAt = now()
          const invite = await store.createInvite(
            { orgId: org.orgId, email: normalizeEmail(body.email), role: body.role, tokenHash: hashHex, invitedByUserId: principal.user.id, invitedAt, expiresAt: invitedAt + inviteLifetimeMs },
            principal.actor,
          )
          try {
            await deps.mailer.send(invitationMail({ invite, token: secret, organizationName: organization.name, inviter: principal.user.name ?? principal.user.email, publicBaseUrl: mailBaseUrl(deps, server) }))
          } catch (error) {
            // An invite whose token nobody received would only block inviting the address again.
            console.error('sending an invitation failed', error)
            await store.revokeInvite({ orgId: org.orgId, inviteId: invite.id, nowMs: now() }, principal.actor)
            throw new GatewayError('service_unavailable', 'The invitation mail could not be sent, so the invite was withdrawn; try again later.')
          }
          set.status = 201
          return inviteObject(invite, invitedAt)
        })
      },
      { body: CreateInvite },
    )
    .delete('/v1/organization/invites/:invite_id', async ({ org, params, principal }) => {
      authorize(org, 'members.manage')
      await store.revokeInvite({ orgId: org.orgId, inviteId: params.invite_id, nowMs: now() }, principal.actor)
      return { object: 'organization.invite.deleted' as const, id: params.invite_id, deleted: true }
    })
}

/** Organizations, their settings, members and invites. */
export function organizationRoutes(deps: ManagementDeps) {
  return new Elysia({ normalize: false })
    .use(accountOrganizationRoutes(deps))
    .use(currentOrganizationRoutes(deps))
    .use(memberRoutes(deps))
    .use(inviteRoutes(deps))
}
