import { errorCatalog, type ErrorCode, type ErrorSpec } from '@nilegate/shared/errors'
import type { Access, Operation } from './operation'

// A session not in memory is looked up within its address's allowance of unknown credentials
// (429), and while the database does not answer it cannot be (503).
const sessionErrors = [
  'missing_auth_header',
  'invalid_token_type',
  'invalid_api_key',
  'token_revoked',
  'user_not_found',
  'user_disabled',
  'rate_limit_exceeded',
  'service_unavailable',
] as const satisfies readonly ErrorCode[]

/** The codes the guard of each kind of route refuses with, before its handler runs. */
const accessErrors: Readonly<Record<Access, readonly ErrorCode[]>> = {
  public: [],
  apiKey: [
    'missing_auth_header',
    'invalid_api_key_format',
    'invalid_token_type',
    'invalid_api_key',
    'key_revoked',
    'key_expired',
    'org_suspended',
    'ip_not_allowed',
    'key_scope_insufficient',
    // The per-key burst guard, an address past its allowance of unknown keys, and a key lookup
    // while the database is unreachable.
    'rate_limit_exceeded',
    'service_unavailable',
  ],
  session: sessionErrors,
  verifiedUser: [...sessionErrors, 'email_not_verified'],
  member: [...sessionErrors, 'email_not_verified', 'not_a_member', 'project_not_in_org', 'permission_denied'],
  operator: [...sessionErrors, 'permission_denied'],
  metrics: ['missing_auth_header', 'invalid_api_key'],
}

/** What a route's shape says about its errors. */
export interface RouteInputs {
  method: string
  hasBody: boolean
  /** A query or path parameter schema, whose mismatch is 400. */
  hasParameterSchema: boolean
}

/**
 * Every code a route can answer with, in the catalog's order: its guard's, those of reading and
 * validating its input, of `Idempotency-Key`, of a change in a suspended organization, and its own.
 */
export function operationErrors(operation: Operation, route: RouteInputs): ErrorCode[] {
  const codes = new Set<ErrorCode>(['internal_error', ...accessErrors[operation.access], ...(operation.errors ?? [])])
  // A body is refused past the route's cap, past the client's share of the budget in flight (429)
  // or the whole budget's, and when it stops arriving (408).
  if (route.hasBody) for (const code of ['invalid_request', 'request_timeout', 'request_too_large', 'rate_limit_exceeded', 'large_request_backpressure'] as const) codes.add(code)
  if (route.hasParameterSchema) codes.add('invalid_request')
  // The routes behind a session refuse a path or query parameter holding text Postgres cannot hold
  // (plugins/storable-text.ts), whatever their schemas.
  if (operation.access !== 'public' && operation.access !== 'apiKey' && operation.access !== 'metrics') codes.add('invalid_request')
  if (operation.idempotency) codes.add('invalid_request').add('conflict')
  if (operation.access === 'member' && route.method !== 'GET') codes.add('org_suspended')
  return (Object.keys(errorCatalog) as ErrorCode[]).filter((code) => codes.has(code))
}

const statusTitles: Readonly<Record<number, string>> = {
  400: 'The request is invalid',
  401: 'Not authenticated',
  402: 'The balance or a spend cap cannot cover the request',
  403: 'Not allowed',
  404: 'Not found',
  408: 'The body stopped arriving',
  409: 'Conflict',
  413: 'The body is too large',
  422: 'A message exceeds the content limits',
  429: 'Rate limited',
  500: 'Server error',
  503: 'Temporarily unavailable',
}

/** Whether answers with `code` carry `Retry-After`. */
export function advisesRetry(code: ErrorCode): boolean {
  return (errorCatalog[code] as ErrorSpec).retryAfterS !== undefined || errorCatalog[code].status === 429
}

/**
 * The error responses of an operation, one per status, each in the OpenAI error envelope and
 * mapping each of its codes to its type in `x-error-codes` (the document's `x-error-catalog` has
 * every code's status, type, default message and retry advice).
 */
export function errorResponses(codes: readonly ErrorCode[], envelope: unknown, header: (name: string) => unknown): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of codes) byStatus.set(errorCatalog[code].status, [...(byStatus.get(errorCatalog[code].status) ?? []), code])
  const responses: Record<string, unknown> = {}
  for (const [status, statusCodes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `${statusTitles[status] ?? 'Error'}: ${statusCodes.map((code) => `\`${code}\``).join(', ')}.`,
      headers: { 'X-Request-Id': header('X-Request-Id'), ...(statusCodes.some(advisesRetry) ? { 'Retry-After': header('Retry-After') } : {}) },
      content: { 'application/json': { schema: envelope } },
      'x-error-codes': Object.fromEntries(statusCodes.map((code) => [code, errorCatalog[code].type])),
    }
  }
  return responses
}

/** Every code with its status, type, default message and retry advice: the document's `x-error-catalog`. */
export function errorCatalogExtension(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(errorCatalog).map(([code, spec]: [string, ErrorSpec]) => [
      code,
      { status: spec.status, type: spec.type, message: spec.message, ...(spec.retryAfterS === undefined ? {} : { retry_after_s: spec.retryAfterS }) },
    ]),
  )
}
