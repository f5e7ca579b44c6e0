/**
 * How an upstream's failures reach the client: as catalog codes whose messages never carry the
 * upstream's address, credentials or internals. The upstream's own words are quoted only when they
 * are about the client's request.
 */
import { GatewayError } from '@nilegate/shared/errors'
import { isRecord } from './upstream-answers'

/** The four deadlines of a deployment. */
export type TimeoutKind = 'connect' | 'first token' | 'idle' | 'total'

/** Names the client's model in quoted messages instead of the upstream's name for it. */
export interface UpstreamNames {
  upstreamModel: string
  modelId: string
}

interface UpstreamErrorDetail {
  message: string
  param: string | null
  status: number | null
  type: string
}

const maxQuotedChars = 500
const busyWords = /\b(loading|overloaded|warming up|starting up|not ready|at capacity|too many requests)\b/i

/** The message, param and status of an upstream error in any of the shapes servers send. */
function describe(value: unknown): UpstreamErrorDetail {
  const detail: UpstreamErrorDetail = { message: '', param: null, status: null, type: '' }
  const error = isRecord(value) && 'error' in value ? value.error : value
  if (typeof error === 'string') {
    detail.message = error
    return detail
  }
  if (!isRecord(error)) return detail
  if (typeof error.message === 'string') detail.message = error.message
  if (typeof error.param === 'string' && error.param !== '') detail.param = error.param
  if (typeof error.type === 'string') detail.type = error.type
  if (typeof error.code === 'number') detail.status = error.code
  // FastAPI validation errors: {"detail":[{"loc":["body","temperature"],"msg":"..."}]}
  const fastapi = error.detail
  if (typeof fastapi === 'string') detail.message = fastapi
  else if (Array.isArray(fastapi) && isRecord(fastapi[0])) {
    const first = fastapi[0]
    if (typeof first.msg === 'string') detail.message = first.msg
    if (Array.isArray(first.loc)) {
      const path = first.loc.filter((part) => part !== 'body').join('.')
      if (path !== '') detail.param = path
    }
  }
  return detail
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** The upstream's message, fit to show the client: the catalog's model name, one line, bounded. */
function quote(message: string, names: UpstreamNames): string {
  let text = message.replace(/\s+/g, ' ').trim()
  if (names.upstreamModel !== '' && names.upstreamModel !== names.modelId) text = text.split(names.upstreamModel).join(names.modelId)
  return text.length > maxQuotedChars ? `${text.slice(0, maxQuotedChars)}...` : text
}

function rejected(detail: UpstreamErrorDetail, names: UpstreamNames): GatewayError {
  const message = detail.message === '' ? 'The model rejected the request.' : `The model rejected the request: ${quote(detail.message, names)}`
  return new GatewayError('invalid_request', message, detail.param)
}

function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null) return undefined
  const seconds = Number(header)
  if (!Number.isFinite(seconds) || seconds < 0) return undefined
  return Math.min(60, Math.max(1, Math.ceil(seconds)))
}

/** Maps a non-2xx answer of the upstream, with its (possibly empty) body, to a gateway error. */
export function upstreamStatusError(status: number, bodyText: string, retryAfter: string | null, names: UpstreamNames): GatewayError {
  const detail = describe(parseBody(bodyText))
  if (status === 401 || status === 403) return new GatewayError('service_unavailable', "The upstream rejected the gateway's credentials.")
  if (status === 408 || status === 429 || status === 503 || (status >= 500 && busyWords.test(detail.message))) {
    return new GatewayError('engine_unavailable', undefined, null, retryAfterSeconds(retryAfter))
  }
  if (status === 400 || status === 413 || status === 422) return rejected(detail, names)
  if (status === 404 && /model/i.test(detail.message)) return new GatewayError('invalid_request', 'The upstream does not serve this model.', 'model')
  return new GatewayError('no_healthy_backends', `The upstream failed (HTTP ${status}).`)
}

/** Maps an `{"error": ...}` event received in the middle of a stream. */
export function upstreamEventError(event: unknown, names: UpstreamNames): GatewayError {
  const detail = describe(event)
  if (busyWords.test(detail.message)) return new GatewayError('engine_unavailable')
  const aboutRequest = detail.status === 400 || detail.status === 422 || /invalid_request|badrequest/i.test(detail.type)
  if (aboutRequest) return rejected(detail, names)
  return new GatewayError('no_healthy_backends', 'The upstream failed mid-stream.')
}

const timeoutMessages: Record<TimeoutKind, string> = {
  connect: 'The upstream did not answer within the connect timeout',
  'first token': 'The upstream sent no first token within the first-token timeout',
  idle: 'The upstream stalled mid-stream past the idle timeout',
  total: 'The upstream did not finish within the total timeout',
}

/** The error of a deadline that passed. */
export function upstreamTimeoutError(kind: TimeoutKind, ms: number): GatewayError {
  return new GatewayError('no_healthy_backends', `${timeoutMessages[kind]} (${ms} ms).`)
}

/** The upstream could not be reached, or its connection broke. */
export function upstreamUnreachableError(midStream: boolean): GatewayError {
  return new GatewayError('no_healthy_backends', midStream ? 'The connection to the upstream broke mid-stream.' : 'The upstream could not be reached.')
}

/** The upstream answered 2xx with something that is not the wire format. */
export function upstreamMalformedError(what: string): GatewayError {
  return new GatewayError('no_healthy_backends', `The upstream sent ${what}.`)
}
