import { treaty } from '@elysiajs/eden/treaty2'
import type { App } from '../../server/http/app'
import { errorFromAnswer } from './errors'
import type { FetchLike } from './transport'

/** The gateway's routes as Eden treaty sees them: typed by the server's own `App`, so they cannot drift apart. */
export type GatewayApi = ReturnType<typeof treaty<App>>

/** The routes under `/v1`. */
export type Routes = GatewayApi['v1']

type SuccessData<Answer> = Answer extends { error: null; data: infer Sent } ? Sent : never

/** What a route call answers with on success. */
export type DataOf<Call> = Call extends (...args: never[]) => Promise<infer Answer> ? Exclude<SuccessData<Answer>, Response> : never

/** The JSON body a route call takes. */
export type BodyOf<Call> = Call extends (body: infer Sent, ...rest: never[]) => unknown ? Exclude<Sent, undefined> : never

/** Eden's answer to one call: `data` on success, `error` otherwise, no `response` when the request itself failed. */
interface Answer<T> {
  data: T | null
  error: { status: unknown; value: unknown } | null
  response?: Response
}

/**
 * Eden treaty over the gateway at `origin` (the base URL without `/v1`), sending through the
 * client's transport with the headers `headers()` gives at the time of each call. Dates stay the
 * strings and numbers the API documents.
 */
export function gatewayApi(origin: string, transport: FetchLike, headers: () => Record<string, string>): GatewayApi {
  return treaty<App>(origin, { fetcher: transport as typeof fetch, headers: () => headers(), parseDate: false, keepDomain: true })
}

/** A successful call's data and response; a failure thrown: a NilegateError for an error answer, the transport's error otherwise. */
export async function answered<T>(pending: Promise<Answer<T>>): Promise<{ data: T; response: Response }> {
  const answer = await pending
  if (answer.response === undefined) throw answer.error?.value
  if (answer.error !== null) throw errorFromAnswer(answer.response.status, answer.error.value, answer.response.headers)
  return { data: answer.data as T, response: answer.response }
}

/** The data of a successful call; a failure thrown as by `answered`. */
export async function unwrap<T>(pending: Promise<Answer<T>>): Promise<T> {
  return (await answered(pending)).data
}

/** What every method takes last. */
export interface RequestOptions {
  /** Aborts the call (and a stream it returned), rejecting with the signal's reason. */
  signal?: AbortSignal
  /**
   * Sent as `Idempotency-Key` instead of the one the client makes per call: a caller that retries
   * a POST itself (a form sent again after a failure) passes the same key, and the gateway answers
   * the retry with the first call's answer instead of doing it twice.
   */
  idempotencyKey?: string
}

/** Eden's per-call options from ours. */
export const callOptions = (options: RequestOptions = {}) => ({
  fetch: { signal: options.signal },
  ...(options.idempotencyKey === undefined ? {} : { headers: { 'idempotency-key': options.idempotencyKey } }),
})

/** One path segment: model ids contain '/', which travels as %2F. */
export const segment = (value: string) => encodeURIComponent(value)
