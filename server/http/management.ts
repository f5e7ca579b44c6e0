import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { hashApiKey, looksLikeApiKey } from '../core/api-keys'
import { bearerToken } from '../core/authenticate'
import type { AdmissionStore } from '../core/admission'
import { addressGroup, type AuthFailureLimiter } from '../core/auth-failure-limiter'
import type { Catalog } from '../core/catalog'
import { clientIp, type AddressList } from '../core/client-ip'
import type { Governance } from '../core/governance'
import { looksLikeSessionToken, type UserRecord } from '../core/governance/accounts'
import type { AuditActor } from '../core/governance/audit'
import type { ChangeBus } from '../core/governance/changes'
import { requirePermission, type MembershipRole, type OrgAction } from '../core/governance/roles'
import type { Mailer } from '../core/mail'
import type { LedgerReader } from '../core/ports'
import type { LoginLimiter } from '../core/login-limiter'
import { readsBodyAfterAuth, unreadBody, type BodyReader } from './request-body'

/** What the management routes (auth, organization, projects, operator) are built from. */
export interface ManagementDeps {
  governance: Governance
  /** Peers whose X-Forwarded-For is believed. */
  trustedProxies: AddressList
  /** Tells every gateway instance about changes their caches hold. */
  changes: ChangeBus
  mailer: Mailer
  /** The model catalog: enabled-model lists are checked against it; operators retire its models. */
  catalog: Catalog
  /** Credit top-ups reach the live balance here. */
  admission: AdmissionStore
  /** The ledger: balances and month-to-date spends for the usage API. */
  ledger: LedgerReader
  /** Brute-force guards of /v1/auth/*; a limiter with the default limits when absent. */
  loginLimiter?: LoginLimiter
  /** PUBLIC_BASE_URL, where mails link (dashboard pages, API requests); the listening address when absent (`mailBaseUrl`). */
  publicBaseUrl?: string | null
  now?: () => number
  /** Reads request bodies once the session is let in; buildApp sets it. */
  bodies?: BodyReader
  /** Bounds the lookups of access tokens that do not exist, per client address; buildApp sets it. */
  authFailures?: AuthFailureLimiter
}

/** The parts of an Elysia context the guards read. */
interface RequestContext {
  request: Request
  server: { requestIP(request: Request): { address: string } | null } | null
  set: { headers: Record<string, unknown> }
}

/** What the guards of the routes read: the request, and the body they read once it is let in. */
interface GuardedContext extends RequestContext {
  path: string
  body: unknown
}

/** Where a request came from and which it is: for audit records and login limits. */
export interface RequestOrigin {
  ip: string | null
  requestId: string | null
}

export function requestOrigin(context: RequestContext, trustedProxies: AddressList): RequestOrigin {
  const peer = context.server?.requestIP(context.request)?.address ?? null
  return {
    ip: clientIp(peer, context.request.headers.get('x-forwarded-for'), trustedProxies),
    requestId: (context.set.headers['x-request-id'] as string | undefined) ?? null,
  }
}

/** The server a request arrived on, as the mails read it. */
interface ListeningServer {
  url?: URL
}

/**
 * The API's base URL that mails link under: PUBLIC_BASE_URL, else the address this gateway listens
 * on (an unspecified one, 0.0.0.0 or ::, as localhost), null when it listens nowhere (a test's
 * app.handle). Never the request's Host header: a client chooses it, and a reset mail would then
 * carry the token to a server of the client's choosing.
 */
export function mailBaseUrl(deps: Pick<ManagementDeps, 'publicBaseUrl'>, server: ListeningServer | null | undefined): string | null {
  if (deps.publicBaseUrl) return deps.publicBaseUrl
  const url = server?.url
  if (!url) return null
  const origin = new URL(url)
  if (origin.hostname === '0.0.0.0' || origin.hostname === '[::]') origin.hostname = 'localhost'
  return `${origin.origin}/v1`
}

/** A signed-in user making this request. */
export interface SessionPrincipal {
  sessionId: string
  user: UserRecord
  origin: RequestOrigin
  /** How audit records name this request's actor. */
  actor: AuditActor
  /** The session's CSRF token when the request came with the session cookie; null with a bearer token. */
  csrfToken: string | null
}

/** The cookie a browser session travels in (`POST /v1/auth/login` with `"session": "cookie"`). */
export const sessionCookieName = 'nilegate_session'
/** The header a cookie-authenticated change must carry, equal to the session's CSRF token. */
export const csrfHeaderName = 'X-CSRF-Token'

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * The CSRF token of a session: derived from its token, so nothing more is stored, and useless to
 * a script that learns it (the session token cannot be computed back from it).
 */
export function csrfTokenFor(sessionToken: string): string {
  return new Bun.CryptoHasher('sha256').update(`csrf:${sessionToken}`).digest('base64url')
}

/** The first value of cookie `name` in a Cookie header; null when absent. */
export function readCookie(header: string | null, name: string): string | null {
  if (!header) return null
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=')
    if (at !== -1 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim()
  }
  return null
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * Whether the request reached the gateway over https: its own URL, or the X-Forwarded-Proto of a
 * trusted proxy (a header from anyone else says nothing).
 */
export function arrivedOverHttps(context: RequestContext, trustedProxies: AddressList): boolean {
  if (context.request.url.startsWith('https:')) return true
  const peer = context.server?.requestIP(context.request)?.address ?? null
  if (peer === null || trustedProxies.size === 0 || !trustedProxies.contains(peer)) return false
  const proto = context.request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase()
  return proto === 'https'
}

/**
 * The Set-Cookie value of the session cookie: httpOnly (no script reads it), SameSite=Strict (no
 * other site's page sends it), scoped to the API, Secure when the request came over https. An
 * empty token with no lifetime clears it.
 */
export function sessionCookie(token: string, maxAgeS: number, secure: boolean): string {
  return `${sessionCookieName}=${token}; Path=/v1; Max-Age=${Math.max(0, Math.floor(maxAgeS))}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`
}

/**
 * Whether a request came from a page of the gateway's own origin, as far as the browser says:
 * `Sec-Fetch-Site`, else `Origin` against `Host` (neither of which a page of another site can set).
 * A client that is no browser sends neither, and is let through.
 */
export function isSameOriginRequest(request: Request): boolean {
  const site = request.headers.get('sec-fetch-site')
  if (site !== null) return site === 'same-origin' || site === 'none'
  const origin = request.headers.get('origin')
  if (origin === null) return true
  try {
    return new URL(origin).host === (request.headers.get('host') ?? new URL(request.url).host)
  } catch {
    return false
  }
}

/** Where a management request's session token came from. */
function sessionTokenOf(request: Request): { token: string; viaCookie: boolean } {
  const authorization = request.headers.get('authorization')
  // The Authorization header wins: a client that sends one means that credential, cookie or not.
  if (authorization === null) {
    const cookie = readCookie(request.headers.get('cookie'), sessionCookieName)
    if (cookie) return { token: cookie, viaCookie: true }
  }
  return { token: bearerToken(authorization), viaCookie: false }
}

/**
 * Resolves the session of a management request: 401 with the exact code for a missing header, an
 * API key (`invalid_token_type`), an unknown, revoked or expired token, a deleted or disabled user.
 * Without an Authorization header the session cookie is read; a change it authenticates (any
 * method but GET, HEAD and OPTIONS) also needs the session's X-CSRF-Token, else 403.
 */
export async function authenticateSession(deps: ManagementDeps, context: RequestContext): Promise<SessionPrincipal> {
  const { token, viaCookie } = sessionTokenOf(context.request)
  if (looksLikeApiKey(token)) throw new GatewayError('invalid_token_type', 'This route takes a session access token from POST /v1/auth/login, not an API key.')
  if (!looksLikeSessionToken(token)) throw new GatewayError('invalid_api_key', 'The access token is not recognised; log in with POST /v1/auth/login.')
  const origin = requestOrigin(context, deps.trustedProxies)
  // Sessions are read on every request, many at once from one office's address: an address is
  // refused lookups only once its tokens have kept turning out unknown.
  const group = addressGroup(origin.ip)
  deps.authFailures?.check(group)
  const found = await deps.governance.accounts.findSessionByTokenHash(hashApiKey(token))
  if (!found) {
    deps.authFailures?.charge(group)
    throw new GatewayError('invalid_api_key', 'The access token is not recognised; log in with POST /v1/auth/login.')
  }
  // The account's state first: a disabled user learns so, whatever became of the session.
  if (found.user.deleted) throw new GatewayError('user_not_found')
  if (found.user.disabled) throw new GatewayError('user_disabled')
  if (found.revokedAt !== null) throw new GatewayError('token_revoked')
  if (found.expiresAt <= (deps.now ?? Date.now)()) throw new GatewayError('token_revoked', 'The session expired; log in again.')
  const csrfToken = viaCookie ? csrfTokenFor(token) : null
  // A browser sends the cookie with whatever request a page of another site makes it send; only
  // the dashboard, which read the CSRF token from the API, can name it.
  if (csrfToken !== null && !safeMethods.has(context.request.method) && !sameText(context.request.headers.get('x-csrf-token') ?? '', csrfToken)) {
    throw new GatewayError('permission_denied', `A change made with the session cookie needs the session's CSRF token in the ${csrfHeaderName} header (from POST /v1/auth/login or GET /v1/auth/me).`)
  }
  return {
    sessionId: found.sessionId,
    user: found.user,
    origin,
    actor: { type: found.user.isOperator ? 'operator' : 'user', id: found.user.id, email: found.user.email, ip: origin.ip, requestId: origin.requestId },
    csrfToken,
  }
}

/** Dashboard use needs a verified address: 403 email_not_verified before it. */
export function requireVerifiedEmail(principal: SessionPrincipal): void {
  if (!principal.user.emailVerified) throw new GatewayError('email_not_verified')
}

/** The organization (and project) a session acts on, from `OpenAI-Organization` and `OpenAI-Project`. */
export interface OrgScope {
  orgId: string
  role: MembershipRole
  status: 'active' | 'suspended'
  /** The project named by `OpenAI-Project`, checked to belong to the organization; null when absent. */
  projectId: string | null
}

/** A header's value quoted in a message: its first 100 characters, so a refusal stays short. */
function quotedHeader(value: string): string {
  return value.length > 100 ? `${value.slice(0, 100)}...` : value
}

/**
 * Selects the organization of a dashboard request: the `OpenAI-Organization` header, or the user's
 * first organization. Unverified users get 403 email_not_verified; non-members 401 not_a_member
 * (the same for an organization that does not exist, so nothing is revealed); a project of
 * another organization 403 project_not_in_org.
 */
export async function selectOrganization(deps: ManagementDeps, principal: SessionPrincipal, request: Request): Promise<OrgScope> {
  requireVerifiedEmail(principal)
  const memberships = await deps.governance.organizations.listMemberships(principal.user.id)
  const wanted = request.headers.get('openai-organization')?.trim() || null
  const membership = wanted === null ? memberships[0] : memberships.find((candidate) => candidate.orgId === wanted)
  if (!membership) {
    throw new GatewayError('not_a_member', wanted === null ? 'You do not belong to any organization yet; create one with POST /v1/organizations or accept an invite.' : `You are not a member of the organization '${quotedHeader(wanted)}'.`)
  }
  const projectId = request.headers.get('openai-project')?.trim() || null
  if (projectId !== null && !(await deps.governance.projects.projectBelongsTo(membership.orgId, projectId))) {
    throw new GatewayError('project_not_in_org', `The project '${quotedHeader(projectId)}' does not belong to the organization '${membership.orgId}'.`)
  }
  return { orgId: membership.orgId, role: membership.role, status: membership.orgStatus, projectId }
}

/**
 * 403 permission_denied unless the member's role allows `action`; a change (any action but a read)
 * in a suspended organization is 403 org_suspended.
 */
export function authorize(scope: OrgScope, action: OrgAction): void {
  requirePermission(scope.role, action)
  if (scope.status === 'suspended' && !action.endsWith('.read')) throw new GatewayError('org_suspended')
}

/**
 * Reads the body the parser left unread (`unreadBody`) for a signed-in user, once the guard has let
 * the request in: no byte of it is read or budgeted for a request answered 401 or 403.
 */
function readBodyOf(deps: ManagementDeps, request: Request, path: string, headers: Record<string, unknown>, principal: SessionPrincipal): Promise<unknown> {
  return deps.bodies!.readFor(request, path, headers, principal.user.id)
}

/** Routes that need a signed-in user: adds `principal`. */
export function sessionAuth(deps: ManagementDeps) {
  return new Elysia().derive(
    { as: 'scoped' },
    readsBodyAfterAuth(async (context: GuardedContext) => {
      const { request, path, server, set } = context
      const principal = await authenticateSession(deps, { request, server, set })
      if (context.body === unreadBody) context.body = await readBodyOf(deps, request, path, set.headers, principal)
      return { principal }
    }),
  )
}

/** Routes of the selected organization: adds `principal` and `org`. */
export function orgAccess(deps: ManagementDeps) {
  return new Elysia().derive(
    { as: 'scoped' },
    readsBodyAfterAuth(async (context: GuardedContext) => {
      const { request, path, server, set } = context
      const principal = await authenticateSession(deps, { request, server, set })
      const org = await selectOrganization(deps, principal, request)
      if (context.body === unreadBody) context.body = await readBodyOf(deps, request, path, set.headers, principal)
      return { principal, org }
    }),
  )
}

/** Routes of platform operators (/v1/admin/*): adds `principal`; others get 403 permission_denied. */
export function operatorAccess(deps: ManagementDeps) {
  return new Elysia().derive(
    { as: 'scoped' },
    readsBodyAfterAuth(async (context: GuardedContext) => {
      const { request, path, server, set } = context
      const principal = await authenticateSession(deps, { request, server, set })
      if (!principal.user.isOperator) throw new GatewayError('permission_denied', 'Only platform operators may use /v1/admin routes.')
      if (context.body === unreadBody) context.body = await readBodyOf(deps, request, path, set.headers, principal)
      return { principal }
    }),
  )
}
