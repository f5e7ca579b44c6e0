import { Elysia, t } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import type { PasswordChange, SessionRecord, UserRecord } from '../../core/governance/accounts'
import { sendVerificationMail, type VerificationDeps } from '../../core/governance/email-verification'
import { changePassword, confirmPassword, type LoginDeps } from '../../core/governance/login'
import { idempotent } from '../idempotency'
import { arrivedOverHttps, mailBaseUrl, sessionAuth, sessionCookie, type ManagementDeps } from '../management'
import { ListQuery, listObject, pageQuery } from '../management-fields'

/** What the auth routes share: the account store, the brute-force guards, the mailer and the clock. */
export type AuthDeps = LoginDeps & VerificationDeps

/** The password policy of sign-up, resets and changes. */
export const NewPassword = t.String({ minLength: 8, maxLength: 200, error: 'must be 8 to 200 characters' })

/** A password set, as the API shows it: whose, and how many of their sessions it ended. */
export function passwordChangeObject(change: PasswordChange) {
  return { object: 'password_change' as const, user_id: change.user.id, sessions_revoked: change.sessionsRevoked }
}

/** A user as the API shows it. */
export function userObject(user: UserRecord) {
  return { object: 'user' as const, id: user.id, email: user.email, name: user.name, email_verified: user.emailVerified, created_at: user.createdAt }
}

function sessionObject(session: SessionRecord, currentSessionId: string) {
  return {
    object: 'session' as const,
    id: session.id,
    ip_address: session.ip,
    user_agent: session.userAgent,
    created_at: session.createdAt,
    expires_at: session.expiresAt,
    current: session.id === currentSessionId,
  }
}

function revokedObject(sessionId: string) {
  return { object: 'session.revoked' as const, id: sessionId, revoked: true }
}

const DeleteAccount = t.Object({ password: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })
const ChangePassword = t.Object({ current_password: t.String({ minLength: 1, maxLength: 200 }), new_password: NewPassword }, { additionalProperties: false })

/** The parts of a context that clearing the session cookie reads. */
interface CookieContext {
  request: Request
  server: { requestIP(request: Request): { address: string } | null } | null
  set: { headers: Record<string, unknown> }
}

/** The signed-in user's own account and sessions: logout, verification mails, /me, session list and revoke. */
export function accountRoutes(deps: ManagementDeps, auth: AuthDeps) {
  /** Tells a browser to drop the session cookie of a session that has just ended. */
  const clearSessionCookie = (context: CookieContext) => {
    context.set.headers['set-cookie'] = sessionCookie('', 0, arrivedOverHttps(context, deps.trustedProxies))
  }
  return new Elysia({ normalize: false })
    .use(sessionAuth(deps))
    .post('/v1/auth/logout', async ({ principal, request, server, set }) => {
      // No Idempotency-Key: a retried logout finds its session ended and answers 401 token_revoked.
      await auth.accounts.revokeSession({ userId: principal.user.id, sessionId: principal.sessionId, action: 'logout' }, principal.actor)
      clearSessionCookie({ request, server, set })
      return revokedObject(principal.sessionId)
    })
    .post(
      '/v1/auth/password',
      async ({ principal, body }) => {
        // No Idempotency-Key: its record would keep a fingerprint of both passwords.
        const changed = await changePassword(auth, { user: principal.user, sessionId: principal.sessionId, currentPassword: body.current_password, newPassword: body.new_password, actor: principal.actor })
        return passwordChangeObject(changed)
      },
      { body: ChangePassword },
    )
    .post('/v1/auth/verify_email/resend', ({ principal, request, server, set }) =>
      idempotent(deps.governance.idempotency, { request, body: null, set, scope: principal.user.id }, async () => {
        if (principal.user.emailVerified) throw new GatewayError('conflict', 'Your e-mail address is already verified.')
        await auth.limiter.admitMail(principal.user.id)
        const { expiresAt } = await sendVerificationMail(auth, principal.user, mailBaseUrl(deps, server))
        set.status = 202
        return { object: 'email_verification' as const, email: principal.user.email, expires_at: Math.floor(expiresAt.getTime() / 1000) }
      }),
    )
    .get('/v1/auth/me', async ({ principal }) => {
      const organizations = await auth.accounts.listUserOrganizations(principal.user.id)
      return {
        ...userObject(principal.user),
        // Whether the /v1/admin routes are open to this user, so a page shows their screens only to operators.
        is_operator: principal.user.isOperator,
        memberships: organizations.map((organization) => ({ organization_id: organization.id, organization_name: organization.name, role: organization.role })),
        // A reloaded page has lost the CSRF token it got at login: it reads it here again.
        csrf_token: principal.csrfToken ?? undefined,
      }
    })
    .delete(
      '/v1/auth/me',
      async ({ principal, body, request, server, set }) => {
        await confirmPassword(auth, principal.user, body.password, principal.origin.ip)
        await auth.accounts.deleteUser(principal.user.id, principal.actor)
        clearSessionCookie({ request, server, set })
        return { object: 'user.deleted' as const, id: principal.user.id, deleted: true }
      },
      { body: DeleteAccount },
    )
    .get(
      '/v1/auth/sessions',
      async ({ principal, query }) => {
        const { sessions, hasMore } = await auth.accounts.listActiveSessions({ userId: principal.user.id, now: new Date(auth.now()), ...pageQuery(query) })
        return listObject({ hasMore }, sessions.map((session) => sessionObject(session, principal.sessionId)))
      },
      { query: ListQuery },
    )
    .delete('/v1/auth/sessions/:id', async ({ principal, params, request, server, set }) => {
      const revoked = await auth.accounts.revokeSession({ userId: principal.user.id, sessionId: params.id, action: 'session.revoked' }, principal.actor)
      // Another user's session is as absent as one that never existed.
      if (!revoked) throw new GatewayError('not_found', `You have no active session '${params.id}'.`, 'id')
      if (params.id === principal.sessionId) clearSessionCookie({ request, server, set })
      return revokedObject(params.id)
    })
}
