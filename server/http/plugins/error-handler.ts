import { Elysia, ValidationError } from 'elysia'
import { GatewayError, type ErrorBody } from '@nilegate/shared/errors'
import { loggableError } from '../../observability/logger'
import type { RequestObserver } from '../../observability/request-record'

/** "/messages/2/role" -> "messages[2].role" */
export function toParam(path: string): string | null {
  const parts = path.split('/').filter(Boolean)
  if (parts.length === 0) return null
  return parts.reduce((param, part) => (/^\d+$/.test(part) ? `${param}[${part}]` : param ? `${param}.${part}` : part), '')
}

/** A schema error as TypeBox reports it; a union's carries the errors of each of its members. */
interface SchemaError {
  type?: number
  path?: string
  message?: string
  schema?: { error?: unknown; const?: unknown }
  errors?: Iterable<SchemaError>[]
}

// TypeBox's ValueErrorType: the value is not the literal, a required property is missing, no member
// of a union matches.
const literalMismatch = 32
const missingProperty = 45
const noUnionMember = 62

/** The errors of each member of a union, read once (TypeBox hands them over as iterators). */
function membersOf(error: SchemaError): SchemaError[][] {
  const members = (error.errors ?? []).map((errors) => (Array.isArray(errors) ? (errors as SchemaError[]) : [...errors]))
  error.errors = members
  return members
}

/** The literal values an error at a discriminator (`role`, `type`) asked for: one, or those of a union of literals; none for other errors. */
function namesAsked(error: SchemaError): unknown[] {
  if (error.type === literalMismatch) return [error.schema?.const]
  if (error.type !== noUnionMember) return []
  const members = membersOf(error)
  if (members.length === 0 || !members.every((errors) => errors.length === 1 && errors[0]!.type === literalMismatch)) return []
  return members.map((errors) => errors[0]!.schema?.const)
}

/**
 * The error to report for a union no member of which matched (a message of no known shape, a
 * content part): not "Expected union value" at the union, but the first error of the member the
 * value was meant to be (its `role` or `type` is that member's, and it fails deeper than the union
 * itself), followed into unions within it, a wrong literal first. When the value names no member,
 * the error says which names there are; when it is of the wrong kind for every member, which kinds
 * there are. A union with a message of its own (`error` in its schema) keeps it.
 */
function innermostError(error: SchemaError): SchemaError {
  for (let depth = 0; error.type === noUnionMember && typeof error.schema?.error !== 'string' && depth < 16; depth++) {
    const at = error.path ?? ''
    const asked: Array<{ error: SchemaError; names: unknown[] }> = []
    const meant: SchemaError[][] = []
    for (const errors of membersOf(error)) {
      // An error at a direct child that asks for literals: the value names another member.
      let misnamed = false
      for (const inner of errors) {
        if (!inner.path?.startsWith(`${at}/`) || inner.path.slice(at.length + 1).includes('/')) continue
        const names = namesAsked(inner)
        if (names.length === 0) continue
        asked.push({ error: inner, names })
        misnamed = true
      }
      if (errors.length > 0 && !misnamed && !errors.some((inner) => inner.path === at)) meant.push(errors)
    }
    if (meant.length > 0) {
      const errors = meant.reduce((fewest, errors) => (errors.length < fewest.length ? errors : fewest))
      // A part of the wrong type says so before saying what that type would need.
      error = errors.find((inner) => inner.type === literalMismatch) ?? errors[0]!
      continue
    }
    if (asked.length > 0) {
      const names = [...new Set(asked.flatMap(({ names }) => names.map((name) => JSON.stringify(name))))]
      return { path: asked[0]!.error.path, message: `must be one of ${names.join(', ')}` }
    }
    const kinds = [...new Set(membersOf(error).flatMap((errors) => errors.filter((inner) => inner.path === at).map((inner) => (inner.message ?? '').replace(/^Expected /, ''))))]
    return { path: at, message: `expected ${kinds.join(' or ')}` }
  }
  return error
}

function fromValidation(error: ValidationError): GatewayError {
  if (error.type === 'response') return new GatewayError('internal_error')
  const first = error.all[0] as SchemaError | undefined
  const reported = first && innermostError(first)
  const param = toParam(reported?.path ?? '')
  const custom = typeof reported?.schema?.error === 'string' ? reported.schema.error : null
  const where = param ?? 'the body'
  const problem = custom ?? (reported?.type === missingProperty ? 'this field is required' : (reported?.message ?? 'does not match the schema'))
  return new GatewayError('invalid_request', `Invalid ${where}: ${problem}.`, param)
}

/** Paths with the methods they answer, to tell 405 from 404. */
export type RouteTable = ReadonlyArray<{ pattern: RegExp; methods: readonly string[] }>

export interface ErrorHandlerOptions {
  /** Where errors no client is told about are reported (`loggableError` makes them safe to log). */
  log?: (message: string, error?: unknown) => void
  /** Ends the record of each request answered with an error. */
  observer?: RequestObserver | null
}

/**
 * Turns every error into the OpenAI error envelope with the catalog's status, `Retry-After` where
 * the catalog advises one, and the request id in the body of 413s. Nothing else reaches a client.
 */
export function errorHandler(routes: RouteTable, options: ErrorHandlerOptions = {}) {
  const log = options.log ?? ((message: string, error?: unknown) => console.error(message, error))
  const observer = options.observer ?? null
  return new Elysia({ name: 'error-handler' }).onError({ as: 'global' }, ({ code, error, request, route, set }) => {
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
      const record = observer?.recordOf(request)
      if (record) observer!.failed(record, route, 499, '')
      return new GatewayError('invalid_request', 'The client closed the connection before the answer.').toBody()
    } else {
      log('unhandled error', loggableError(error))
      gatewayError = new GatewayError('internal_error')
    }
    const record = observer?.recordOf(request)
    if (record) observer!.failed(record, route, gatewayError.status, gatewayError.code)
    set.status = gatewayError.status
    if (gatewayError.retryAfterS !== undefined) set.headers['retry-after'] = String(gatewayError.retryAfterS)
    // A 413 may reach a client that had not finished sending: the body names the request itself.
    const body: ErrorBody = gatewayError.toBody(gatewayError.code === 'request_too_large' ? (set.headers['x-request-id'] as string) : undefined)
    return body
  })
}
