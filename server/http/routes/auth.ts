import { Elysia, t } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { hashApiKey } from '../../core/api-keys'
import { isEmailAddress, normalizeEmail } from '../../core/governance/accounts'
import { sendVerificationMail } from '../../core/governance/email-verification'
import { logIn } from '../../core/governance/login'
import { confirmPasswordReset, requestPasswordReset } from '../../core/governance/password-reset'
import { InProcessLoginLimiter } from '../../core/login-limiter'
import { arrivedOverHttps, csrfTokenFor, isSameOriginRequest, mailBaseUrl, requestOrigin, sessionCookie, type ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'
import { accountRoutes, NewPassword, passwordChangeObject, userObject, type AuthDeps } from './auth-account'

export const authRouteTable: RouteTable = [
  { pattern: /^\/v1\/auth\/(signup|login|logout|verify_email|verify_email\/resend|password|password_reset|password_reset\/confirm)\/?$/, methods: ['POST'] },
  { pattern: /^\/v1\/auth\/me\/?$/, methods: ['GET', 'DELETE'] },
  { pattern: /^\/v1\/auth\/sessions\/?$/, methods: ['GET'] },
  { pattern: /^\/v1\/auth\/sessions\/[^/]+\/?$/, methods: ['DELETE'] },
]

const maxUserAgentLength = 512

const SignUp = t.Object(
  {
    email: t.String({ minLength: 3, maxLength: 254 }),
    password: NewPassword,
    name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
)
const VerifyEmail = t.Object({ token: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })
const PasswordReset = t.Object({ email: t.String({ minLength: 1, maxLength: 254 }) }, { additionalProperties: false })
const PasswordResetConfirm = t.Object({ token: t.String({ minLength: 1, maxLength: 200 }), new_password: NewPassword }, { additionalProperties: false })
const LogIn = t.Object(
  {
    email: t.String({ minLength: 1, maxLength: 254 }),
    password: t.String({ minLength: 1, maxLength: 200 }),
    session: t.Optional(
      t.Union([t.Literal('token'), t.Literal('cookie')], {
        description: '`token` (the default) answers with the access token; `cookie` keeps it in an httpOnly cookie for a browser and answers with the CSRF token instead.',
        error: "must be 'token' or 'cookie'",
      }),
    ),
  },
  { additionalProperties: false },
)

/**
 * Accounts and sessions under /v1/auth/*. Signing up, verifying and logging in need no session;
 * they are limited per client IP (and logins per address). They take no Idempotency-Key: there is
 * no user to scope it to, and its record would keep a hash of the password (the body's fingerprint)
 * or the access token (the answer).
 */
export function authRoutes(deps: ManagementDeps) {
  const auth: AuthDeps = {
    accounts: deps.governance.accounts,
    limiter: deps.loginLimiter ?? new InProcessLoginLimiter(),
    mailer: deps.mailer,
    now: deps.now ?? Date.now,
    publicBaseUrl: deps.publicBaseUrl ?? null,
  }
  return new Elysia({ normalize: false })
    .post(
      '/v1/auth/signup',
      async ({ body, request, server, set }) => {
        const source = requestOrigin({ request, server, set }, deps.trustedProxies)
        await auth.limiter.admitAttempt(source.ip)
        const email = normalizeEmail(body.email)
        if (!isEmailAddress(email)) throw new GatewayError('invalid_request', `'${body.email}' is not an e-mail address.`, 'email')
        // Argon2 is slow on purpose: hash before the transaction, not inside it.
        const passwordHash = await Bun.password.hash(body.password, 'argon2id')
        const user = await auth.accounts.createUser({ email, name: body.name?.trim() || null, passwordHash, emailVerified: false }, source)
        await sendVerificationMail(auth, user, mailBaseUrl(deps, server))
        set.status = 201
        return userObject(user)
      },
      { body: SignUp },
    )
    .post(
      '/v1/auth/verify_email',
      async ({ body, request, server, set }) => {
        const source = requestOrigin({ request, server, set }, deps.trustedProxies)
        await auth.limiter.admitAttempt(source.ip)
        const user = await auth.accounts.verifyEmail(hashApiKey(body.token), new Date(auth.now()), source)
        if (!user) throw new GatewayError('invalid_request', 'The verification token is unknown, already used or expired; ask for a new one with POST /v1/auth/verify_email/resend.', 'token')
        return userObject(user)
      },
      { body: VerifyEmail },
    )
    .post(
      '/v1/auth/login',
      async ({ body, request, server, set }) => {
        // Another site's page could post a login form (a body is read as JSON whatever its type)
        // and leave the browser signed in to an account of the attacker's choosing.
        if (body.session === 'cookie' && !isSameOriginRequest(request)) {
          throw new GatewayError('permission_denied', "A cookie session is opened only from a page of the gateway's own origin.")
        }
        const login = await logIn(auth, {
          email: body.email,
          password: body.password,
          source: requestOrigin({ request, server, set }, deps.trustedProxies),
          userAgent: request.headers.get('user-agent')?.slice(0, maxUserAgentLength) ?? null,
        })
        const expiresAt = Math.floor(login.expiresAt.getTime() / 1000)
        const session = { object: 'session' as const, id: login.sessionId, expires_at: expiresAt, user: userObject(login.user) }
        if (body.session === 'cookie') {
          // The token stays where no script of the page can read it; the page gets what it must
          // send back with each change instead.
          const secure = arrivedOverHttps({ request, server, set }, deps.trustedProxies)
          set.headers['set-cookie'] = sessionCookie(login.token, Math.round((login.expiresAt.getTime() - auth.now()) / 1000), secure)
          set.headers['cache-control'] = 'no-store'
          return { ...session, token_type: 'cookie' as const, csrf_token: csrfTokenFor(login.token) }
        }
        return { ...session, access_token: login.token, token_type: 'bearer' as const }
      },
      { body: LogIn },
    )
    .post(
      '/v1/auth/password_reset',
      async ({ body, request, server, set }) => {
        const requested = await requestPasswordReset(auth, { email: body.email, source: requestOrigin({ request, server, set }, deps.trustedProxies), baseUrl: mailBaseUrl(deps, server) })
        set.status = 202
        return { object: 'password_reset' as const, email: requested.email, expires_at: Math.floor(requested.expiresAt.getTime() / 1000) }
      },
      { body: PasswordReset },
    )
    .post(
      '/v1/auth/password_reset/confirm',
      async ({ body, request, server, set }) => {
        const changed = await confirmPasswordReset(auth, { token: body.token, newPassword: body.new_password, source: requestOrigin({ request, server, set }, deps.trustedProxies) })
        return passwordChangeObject(changed)
      },
      { body: PasswordResetConfirm },
    )
    .use(accountRoutes(deps, auth))
}
