/**
 * The error catalog: every code the gateway answers with, its HTTP status, its OpenAI-style `type`,
 * a default message and retry advice. The server's error handler and the SDK both derive from it.
 */

/** One entry of the catalog. */
export interface ErrorSpec {
  readonly status: number
  readonly type: string
  readonly message: string
  /** Seconds a client should wait before retrying; absent when retrying cannot help. */
  readonly retryAfterS?: number
}

const invalid = 'invalid_request_error'
const auth = 'authentication_error'
const quota = 'quota_exceeded'
const denied = 'permission_denied'
const unavailable = 'service_unavailable'

/** Every error code of the API, once. */
export const errorCatalog = {
  // 400: validation
  invalid_request: { status: 400, type: invalid, message: 'The request is invalid.' },
  model_not_found: { status: 400, type: invalid, message: 'The model does not exist or is not in your catalog.' },
  model_not_supported_on_endpoint: { status: 400, type: invalid, message: 'The model does not support this endpoint.' },
  invalid_role: { status: 400, type: invalid, message: "Message role must be one of 'system', 'developer', 'user', 'assistant' or 'tool'." },
  missing_content: { status: 400, type: invalid, message: 'The message has no content.' },
  max_tokens_exceeded: { status: 400, type: invalid, message: "max_tokens exceeds the model's limit." },
  empty_input: { status: 400, type: invalid, message: 'The input is empty.' },
  input_too_large: { status: 400, type: invalid, message: "The input exceeds the model's per-call token budget." },
  // 401: authentication
  missing_auth_header: { status: 401, type: auth, message: 'Missing Authorization header. Send "Authorization: Bearer sk-...".' },
  invalid_api_key_format: { status: 401, type: auth, message: "The API key has the wrong format: keys start with 'sk-'." },
  invalid_api_key: { status: 401, type: auth, message: 'Incorrect API key provided.' },
  key_revoked: { status: 401, type: auth, message: 'This API key has been revoked.' },
  key_expired: { status: 401, type: auth, message: 'This API key has expired.' },
  invalid_token_type: { status: 401, type: auth, message: 'Wrong token type for this endpoint: use an API key for inference and a session token for management.' },
  token_revoked: { status: 401, type: auth, message: 'This session has ended. Log in again.' },
  user_not_found: { status: 401, type: auth, message: 'The user of this session no longer exists.' },
  user_disabled: { status: 401, type: auth, message: 'This user account is disabled.' },
  not_a_member: { status: 401, type: auth, message: 'You are not a member of the selected organization.' },
  invalid_credentials: { status: 401, type: auth, message: 'Incorrect e-mail address or password.' },
  // 402: billing
  quota_exceeded: { status: 402, type: quota, message: 'The organization has no credit left. Top up to continue.' },
  insufficient_balance: { status: 402, type: quota, message: 'This request holds the most it can cost (a token per UTF-8 byte of the prompt, plus max_tokens), more than the balance has left. Lower max_tokens, shorten the prompt, or top up.' },
  spending_cap_reached: { status: 402, type: quota, message: "This API key has reached its monthly spend cap." },
  project_spend_cap_exceeded: { status: 402, type: quota, message: "The project has reached its monthly spend cap." },
  // 403: permission
  org_suspended: { status: 403, type: denied, message: 'The organization is suspended.' },
  email_not_verified: { status: 403, type: denied, message: 'Verify your e-mail address first.' },
  permission_denied: { status: 403, type: denied, message: 'Your role does not allow this action.' },
  ip_not_allowed: { status: 403, type: denied, message: "The request IP is not on this key's allow-list." },
  key_scope_insufficient: { status: 403, type: denied, message: 'This API key lacks the scope for this endpoint.' },
  model_not_available: { status: 403, type: denied, message: "The model is not available on your organization's plan." },
  model_sunset: { status: 403, type: denied, message: 'The model has been retired.' },
  model_not_enabled_for_project: { status: 403, type: denied, message: 'The model is not enabled for this project.' },
  project_not_in_org: { status: 403, type: denied, message: 'The selected project does not belong to the active organization.' },
  // 404, 405, 408, 409, 413, 422
  not_found: { status: 404, type: 'not_found', message: 'Not found.' },
  method_not_allowed: { status: 405, type: invalid, message: 'This method is not allowed on this route.' },
  request_timeout: { status: 408, type: invalid, message: 'The request body stopped arriving before it was complete; send the request again.' },
  conflict: { status: 409, type: 'conflict', message: 'The request conflicts with the current state.' },
  request_too_large: { status: 413, type: invalid, message: 'The request body is too large.' },
  content_limit_exceeded: { status: 422, type: invalid, message: 'A message exceeds the content limits.' },
  // 429
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error', message: 'Rate limit reached.' },
  // 5xx
  internal_error: { status: 500, type: 'internal_error', message: 'The server had an error while processing your request. Retry with backoff.', retryAfterS: 1 },
  service_unavailable: { status: 503, type: unavailable, message: 'The service is temporarily unavailable. Retry in 30 to 60 seconds.', retryAfterS: 30 },
  no_healthy_backends: { status: 503, type: unavailable, message: 'The model is temporarily unavailable. Retry or switch model.', retryAfterS: 30 },
  engine_unavailable: { status: 503, type: unavailable, message: 'The model is starting up or overloaded. Retry once.', retryAfterS: 1 },
  large_request_backpressure: { status: 503, type: unavailable, message: 'A burst of very large requests exceeded the in-flight body budget. Retry in 2 seconds.', retryAfterS: 2 },
} as const satisfies Record<string, ErrorSpec>

/** Every error code of the API. */
export type ErrorCode = keyof typeof errorCatalog

/** The OpenAI error envelope. */
export interface ErrorBody {
  /** `request_id` is set on request_too_large (SPEC 7.1), the same value as `X-Request-Id`. */
  error: { type: string; message: string; code: ErrorCode; param: string | null; request_id?: string }
  /** The same request id at the top level, where the first version put it; kept for clients that read it there. */
  request_id?: string
}

/** An error the gateway answers with: a catalog code, an optional message and the offending field. */
export class GatewayError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string = errorCatalog[code].message,
    readonly param: string | null = null,
    /** Overrides the catalog's retry advice (e.g. the seconds until a rate window admits again). */
    readonly retryAfterS: number | undefined = (errorCatalog[code] as ErrorSpec).retryAfterS,
  ) {
    super(message)
    this.name = 'GatewayError'
  }

  get status(): number {
    return errorCatalog[this.code].status
  }

  /** The envelope; given a request id, it is carried inside `error` and beside it. */
  toBody(requestId?: string): ErrorBody {
    const error = { type: errorCatalog[this.code].type, message: this.message, code: this.code, param: this.param }
    if (requestId === undefined) return { error }
    return { error: { ...error, request_id: requestId }, request_id: requestId }
  }
}

/** Whether a string is a code of the catalog. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(errorCatalog, code)
}
