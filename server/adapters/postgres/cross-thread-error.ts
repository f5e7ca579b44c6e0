import { GatewayError, isErrorCode } from '@nilegate/shared/errors'

/**
 * An error as it crosses between threads in a message. Structured clone keeps only the name and
 * message of an Error, so `code` (a catalog code, or a Postgres SQLSTATE), `param` and
 * `retryAfterS` travel as fields of their own.
 */
export interface SerializedError {
  name: string
  message: string
  stack?: string
  code?: string
  param?: string | null
  retryAfterS?: number
}

/** What of `error` a message can carry. */
export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) }
  const { code, param, retryAfterS } = error as Error & { code?: unknown; param?: unknown; retryAfterS?: unknown }
  return {
    name: error.name,
    message: error.message,
    ...(error.stack === undefined ? {} : { stack: error.stack }),
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof param === 'string' || param === null ? { param } : {}),
    ...(typeof retryAfterS === 'number' ? { retryAfterS } : {}),
  }
}

const builtInErrors: Record<string, ErrorConstructor> = { RangeError, TypeError, SyntaxError, ReferenceError, EvalError, URIError }

/**
 * Rebuilds a GatewayError as itself, a built-in error as its class, and any other error (a Postgres
 * one, say) as an Error with the same name, message and code.
 */
export function reviveError(serialized: SerializedError): Error {
  let error: Error
  if (serialized.name === 'GatewayError' && isErrorCode(serialized.code)) {
    error = new GatewayError(serialized.code, serialized.message, serialized.param ?? null, serialized.retryAfterS)
  } else {
    error = new (builtInErrors[serialized.name] ?? Error)(serialized.message)
    error.name = serialized.name
    if (serialized.code !== undefined) Object.assign(error, { code: serialized.code })
  }
  // The thread's stack says where it failed; the caller's would only show this file.
  if (serialized.stack !== undefined) error.stack = serialized.stack
  return error
}
