import { Elysia, ValidationError } from 'elysia'
import { GatewayError, type ErrorBody } from '@nilegate/shared/errors'

/** "/messages/2/role" -> "messages[2].role" */
export function toParam(path: string): string | null {
  const parts = path.split('/').filter(Boolean)
  if (parts.length === 0) return null
  return parts.reduce((param, part) => (/^\d+$/.test(part) ? `${param}[${part}]` : param ? `${param}.${part}` : part), '')
}

function fromValidation(error: ValidationError): GatewayError {
  if (error.type === 'response') return new GatewayError('internal_error')
  const first = error.all[0] as { path?: string; message?: string; schema?: { error?: unknown } } | undefined
  const param = toParam(first?.path ?? '')
  const custom = typeof first?.schema?.error === 'string' ? first.schema.error : null
  const where = param ?? 'the body'
  const message = custom ? `Invalid ${where}: ${custom}.` : `Invalid ${where}: ${first?.message ?? 'does not match the schema'}.`
  return new GatewayError('invalid_request', message, param)
}

/** Paths with the methods they answer, to tell 405 from 404. */
export type RouteTable = ReadonlyArray<{ pattern: RegExp; methods: readonly string[] }>

/**
 * Turns every error into the OpenAI error envelope with the catalog's status, `Retry-After` where
 * the catalog advises one, and the request id in the body of 413s. Nothing else reaches a client.
 */
export function errorHandler(routes: RouteTable) {
  return new Elysia({ name: 'error-handler' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    let gatewayError: GatewayError
    if (error instanceof GatewayError) gatewayError = error
    else if (code === 'PARSE' && (error as { cause?: unknown }).cause instanceof GatewayError) gatewayError = (error as { cause: GatewayError }).cause
    else if (code === 'VALIDATION') gatewayError = fromValidation(error as ValidationError)
    else if (code === 'PARSE') gatewayError = new GatewayError('invalid_request', 'The request body could not be read.')
    else if (code === 'NOT_FOUND') {
      const { pathname } = new URL(request.url)
      const route = routes.find(({ pattern }) => pattern.test(pathname))
      if (route && !route.methods.includes(request.method)) {
        set.headers.allow = route.methods.join(', ')
        gatewayError = new GatewayError('method_not_allowed', `${request.method} is not allowed on ${pathname}; use ${route.methods.join(' or ')}.`)
      } else gatewayError = new GatewayError('not_found', `No route ${request.method} ${pathname}.`)
    } else if (request.signal.aborted) {
      // The client went away (its usage is recorded as 499) and the work for it was stopped: the
      // abort that surfaced here is no fault, and nobody reads this answer.
      set.status = 499
      return new GatewayError('invalid_request', 'The client closed the connection before the answer.').toBody()
    } else {
      console.error('unhandled error', error)
      gatewayError = new GatewayError('internal_error')
    }
    set.status = gatewayError.status
    if (gatewayError.retryAfterS !== undefined) set.headers['retry-after'] = String(gatewayError.retryAfterS)
    const body: ErrorBody = gatewayError.toBody()
    if (gatewayError.code === 'request_too_large') body.request_id = set.headers['x-request-id'] as string
    return body
  })
}
