import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { keyScopes } from '../../../core/authenticate'
import { deletedObject, egp, listOf, oneOfStrings, orNull, unixSeconds } from './fields'

/** A project with its limits. */
export const Project = t.Object({
  object: t.Literal('organization.project'),
  id: t.String(),
  name: t.String(),
  created_at: unixSeconds(),
  archived_at: orNull(unixSeconds()),
  status: t.Union([t.Literal('active'), t.Literal('archived')]),
  monthly_spend_cap_egp: orNull(egp('Spend allowed per calendar month of the billing time zone.')),
  rpm_override: orNull(Type.Integer()),
  enabled_models: orNull(t.Array(t.String(), { description: "The models the project's keys may call; null for every model." })),
})

export const ProjectList = listOf(Project)

/** An API key of a project, never its secret. */
export const ApiKey = t.Object({
  object: t.Literal('organization.project.api_key'),
  id: t.String(),
  name: t.String(),
  redacted_value: t.String({ description: 'Enough of the key to recognise it, like `sk-AbCd...WxYz`.' }),
  created_at: unixSeconds(),
  last_used_at: orNull(unixSeconds()),
  expires_at: orNull(unixSeconds()),
  revoked_at: orNull(unixSeconds()),
  status: t.Union([t.Literal('active'), t.Literal('revoked'), t.Literal('expired')]),
  rpm_limit: orNull(Type.Integer()),
  monthly_spend_cap_egp: orNull(egp('Spend allowed per calendar month of the billing time zone.')),
  ip_allow_list: t.Array(t.String(), { description: 'IPv4 and IPv6 addresses and CIDRs; empty for any address.' }),
  scopes: t.Array(oneOfStrings(keyScopes)),
  owner: t.Object({
    type: t.Literal('user'),
    user: orNull(t.Object({ id: t.String(), email: t.String() }, { description: 'The user who created the key; null once that account is gone.' })),
  }),
})

/** A new API key: `value` is its secret, shown in this answer only (null in a replay). */
export const ApiKeyWithSecret = t.Object({
  ...ApiKey.properties,
  value: orNull(t.String({ description: 'The secret (sk-...), shown once; null when this answer is the replay of an earlier request with the same Idempotency-Key (`Idempotent-Replayed: true`): the key exists, its secret is not shown again.' })),
})

export const ApiKeyList = listOf(ApiKey)
export const ApiKeyDeleted = deletedObject('organization.project.api_key.deleted')
