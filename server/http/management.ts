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
  /** PUBLIC_BASE_URL, for the requests that mails show; mails carry only the token when absent. */
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

/** A signed-in user making this request. */
export interface SessionPrincipal {
  sessionId: string
  user: UserRecord
  origin: RequestOrigin
  /** How audit records name this request's actor. */
  actor: AuditActor
}

/**
 * Resolves the session of a management request: 401 with the exact code for a missing header, an
 * API key (`invalid_token_type`), an unknown, revoked or expired token, a deleted or disabled user.
 */
export async function authenticateSession(deps: ManagementDeps, context: RequestContext): Promise<SessionPrincipal> {
  const token = bearerToken(context.request.headers.get('authorization'))
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
  return {
    sessionId: found.sessionId,
    user: found.user,
    origin,
    actor: { type: found.user.isOperator ? 'operator' : 'user', id: found.user.id, email: found.user.email, ip: origin.ip, requestId: origin.requestId },
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
