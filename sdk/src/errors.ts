import { errorCatalog, isErrorCode, type ErrorCode } from '@nilegate/shared/errors'

export type { ErrorCode }

/** What an error answer says, beside its status: the OpenAI error envelope's fields and the headers that matter. */
export interface NilegateErrorInit {
  status: number
  code: ErrorCode
  message: string
  type?: string
  param?: string | null
  requestId?: string | null
  retryAfter?: number | null
}

/** An error answer of the gateway, rebuilt from its OpenAI-shaped body and its headers. */
export class NilegateError extends Error {
  /** The HTTP status: 400, 401, 402 (quota), 403, 404, 409, 413, 422, 429 or 5xx. */
  readonly status: number
  /** The catalog code: compare it with a string literal and your editor completes every code. */
  readonly code: ErrorCode
  /** The OpenAI error `type`, such as `quota_exceeded` or `rate_limit_error`. */
  readonly type: string
  /** The request field at fault, as `messages[0].role`; null when the request as a whole is. */
  readonly param: string | null
  /** The gateway's `X-Request-Id`, to quote when asking about this request. */
  readonly requestId: string | null
  /** Seconds the gateway asked to wait before trying again (`Retry-After`); null when it gave none. */
  readonly retryAfter: number | null

  constructor(init: NilegateErrorInit) {
    super(init.message)
    this.name = 'NilegateError'
    this.status = init.status
    this.code = init.code
    this.type = init.type ?? errorCatalog[init.code].type
    this.param = init.param ?? null
    this.requestId = init.requestId ?? null
    this.retryAfter = init.retryAfter ?? null
  }
}

/** The request never got an answer: the gateway was unreachable or the connection broke. */
export class NilegateConnectionError extends Error {
  constructor(message = 'Could not reach the gateway.', options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'NilegateConnectionError'
  }
}

/** No answer came within the client's `timeout`. */
export class NilegateTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The gateway did not answer within ${timeoutMs} ms.`)
    this.name = 'NilegateTimeoutError'
  }
}

/** The code of an answer that carries no catalog code (a proxy's page, say): the nearest general one. */
function fallbackCode(status: number): ErrorCode {
  if (status === 503) return 'service_unavailable'
  if (status >= 500) return 'internal_error'
  if (status === 429) return 'rate_limit_exceeded'
  if (status === 404) return 'not_found'
  return 'invalid_request'
}

/** Seconds from a `Retry-After` header: a number of seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(header: string | null, nowMs = Date.now()): number | null {
  if (header === null || header.trim() === '') return null
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds)
  const date = Date.parse(header)
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - nowMs) / 1000))
}

/** The `error` object of an OpenAI error envelope, when `body` is one. */
function envelopeOf(body: unknown): { message?: unknown; type?: unknown; code?: unknown; param?: unknown } | null {
  if (typeof body !== 'object' || body === null || !('error' in body)) return null
  const error = (body as { error: unknown }).error
  return typeof error === 'object' && error !== null ? error : null
}

/**
 * The error of an answer with `status`: its body's envelope when it has one (an SSE `error` event
 * has one too), otherwise the nearest general code with the body's text as the message.
 */
export function errorFromAnswer(status: number, body: unknown, headers: Headers | null): NilegateError {
  const envelope = envelopeOf(body)
  const code = isErrorCode(envelope?.code) ? envelope.code : fallbackCode(status)
  const text = typeof body === 'string' && body.trim() !== '' ? body.slice(0, 500) : null
  return new NilegateError({
    status,
    code,
    message: typeof envelope?.message === 'string' ? envelope.message : (text ?? errorCatalog[code].message),
    type: typeof envelope?.type === 'string' ? envelope.type : undefined,
    param: typeof envelope?.param === 'string' ? envelope.param : null,
    requestId: headers?.get('x-request-id') ?? null,
    retryAfter: parseRetryAfter(headers?.get('retry-after') ?? null),
  })
}

/** The error of an SSE `error` event: the stream's headers said 200, so the status is the catalog's for its code. */
export function errorFromEvent(body: unknown, headers: Headers): NilegateError {
  const code = envelopeOf(body)?.code
  return errorFromAnswer(isErrorCode(code) ? errorCatalog[code].status : 500, body, headers)
}
