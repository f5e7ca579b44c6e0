import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Role } from './accounts'
import { deletedObject, egp, listOf, orNull, unixSeconds } from './fields'

/** An organization; `role` is the caller's, null in the operators' API. */
export const Organization = t.Object({
  object: t.Literal('organization'),
  id: t.String(),
  name: t.String(),
  plan_tier: t.Union([t.Literal('free'), t.Literal('developer'), t.Literal('team'), t.Literal('enterprise')]),
  status: t.Union([t.Literal('active'), t.Literal('suspended')]),
  custom_rpm_ceiling: orNull(Type.Integer()),
  allowed_models: orNull(t.Array(t.String(), { description: 'The models the organization may use; null for every model of its plan.' })),
  requires_region: orNull(t.String({ description: 'Requests are served only by deployments in this region.' })),
  billing_time_zone: t.String({ description: 'IANA time zone in which monthly caps reset and usage days are counted.' }),
  balance_egp: egp('Prepaid credit left.'),
  role: orNull(Role),
  created_at: unixSeconds(),
})

export const OrganizationList = listOf(Organization)

/** A member of the organization. */
export const OrganizationUser = t.Object({
  object: t.Literal('organization.user'),
  id: t.String(),
  name: orNull(t.String()),
  email: t.String(),
  role: Role,
  added_at: unixSeconds(),
})

export const OrganizationUserList = listOf(OrganizationUser)
export const OrganizationUserDeleted = deletedObject('organization.user.deleted')

/** An invitation; its token travels only by mail. */
export const OrganizationInvite = t.Object({
  object: t.Literal('organization.invite'),
  id: t.String(),
  email: t.String(),
  role: Role,
  status: t.Union([t.Literal('pending'), t.Literal('accepted'), t.Literal('expired'), t.Literal('revoked')]),
  invited_at: unixSeconds(),
  expires_at: unixSeconds(),
  accepted_at: orNull(unixSeconds()),
})

export const OrganizationInviteList = listOf(OrganizationInvite)
export const OrganizationInviteDeleted = deletedObject('organization.invite.deleted')
