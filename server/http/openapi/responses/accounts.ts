import { Type } from '@sinclair/typebox'
import { literalUnion } from '@nilegate/shared/schemas/common'
import { t } from 'elysia'
import { membershipRoles } from '../../../core/governance/roles'
import { deletedObject, listOf, orNull, unixSeconds } from './fields'

/** A membership role. */
export const Role = literalUnion(membershipRoles)

/** A user account. */
export const User = t.Object({
  object: t.Literal('user'),
  id: t.String(),
  email: t.String(),
  name: orNull(t.String()),
  email_verified: t.Boolean(),
  created_at: unixSeconds(),
})

/** The signed-in user with the organizations they belong to. */
export const CurrentUser = t.Object({
  ...User.properties,
  is_operator: t.Boolean({ description: 'Whether the user is a platform operator, who may use the /v1/admin routes.' }),
  memberships: t.Array(t.Object({ organization_id: t.String(), organization_name: t.String(), role: Role })),
  csrf_token: t.Optional(t.String({ description: 'With the session cookie only: the value of the `X-CSRF-Token` header that changes need.' })),
})

/** A new session: `access_token` (ngs_...) goes in `Authorization: Bearer` of management requests. */
export const BearerSession = t.Object({
  object: t.Literal('session'),
  id: t.String(),
  access_token: t.String({ description: 'The session token, shown once.' }),
  token_type: t.Literal('bearer'),
  expires_at: unixSeconds(),
  user: User,
})

/** A new browser session: its token is in the httpOnly `nilegate_session` cookie, out of reach of scripts. */
export const CookieSession = t.Object({
  object: t.Literal('session'),
  id: t.String(),
  token_type: t.Literal('cookie'),
  csrf_token: t.String({ description: 'Send it as the `X-CSRF-Token` header with every request but GET, HEAD and OPTIONS.' }),
  expires_at: unixSeconds(),
  user: User,
})

/** The answer of a login: a bearer token, or (`"session": "cookie"`) a cookie and its CSRF token. */
export const LoginSession = t.Union([BearerSession, CookieSession])

/** An active session of the signed-in user. */
export const Session = t.Object({
  object: t.Literal('session'),
  id: t.String(),
  ip_address: orNull(t.String()),
  user_agent: orNull(t.String()),
  created_at: unixSeconds(),
  expires_at: unixSeconds(),
  current: t.Boolean({ description: 'Whether this is the session making the request.' }),
})

export const SessionList = listOf(Session)

/** A session that has ended. */
export const SessionRevoked = t.Object({ object: t.Literal('session.revoked'), id: t.String(), revoked: t.Boolean() })

/** A verification mail on its way. */
export const EmailVerification = t.Object({ object: t.Literal('email_verification'), email: t.String(), expires_at: unixSeconds() })

export const UserDeleted = deletedObject('user.deleted')

/** A password reset asked for: the same answer whether or not an account has the address. */
export const PasswordResetRequested = t.Object({
  object: t.Literal('password_reset'),
  email: t.String(),
  expires_at: unixSeconds('When a token mailed now stops working (unix seconds).'),
})

/** A password set: whose, and how many of their sessions it ended. */
export const PasswordChanged = t.Object({
  object: t.Literal('password_change'),
  user_id: t.String(),
  sessions_revoked: Type.Integer({ minimum: 0, description: 'The sessions the change ended.' }),
})
