import { GatewayError } from '@nilegate/shared/errors'
import { endOfTurn } from '../../core/end-of-turn'
import type { ProviderCall } from '../../core/ports'
import { type TimeoutKind, upstreamMalformedError, upstreamStatusError, upstreamTimeoutError, upstreamUnreachableError } from './upstream-errors'

const maxErrorBodyBytes = 16_384
const sweepEveryMs = 25
/**
 * The most bytes of one whole answer the gateway reads: far above any completion, or embeddings
 * answer in floats, it bounds the memory a misbehaving upstream can make a request hold.
 */
export const maxAnswerBytes = 256 * 1024 * 1024

/**
 * The body as text, read to its end or until more than `maxBytes` arrived (the rest is then
 * cancelled, and `complete` is false); a read that fails ends it with what arrived and the error.
 */
async function readUpTo(response: Response, maxBytes: number): Promise<{ text: string; complete: boolean; error?: unknown }> {
  const reader = response.body?.getReader()
  if (!reader) return { text: '', complete: true }
  const decoder = new TextDecoder()
  let text = ''
  let bytes = 0
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      text += decoder.decode(read.value, { stream: true })
      bytes += read.value.byteLength
      if (bytes > maxBytes) {
        await reader.cancel().catch(() => {})
        return { text, complete: false }
      }
    }
  } catch (error) {
    return { text, complete: false, error }
  }
  return { text: text + decoder.decode(), complete: true }
}

/** The body as text, failing as a malformed answer once it passes `maxBytes`. */
export async function readCapped(response: Response, maxBytes: number): Promise<string> {
  const { text, complete, error } = await readUpTo(response, maxBytes)
  if (error !== undefined) throw error
  if (!complete) throw upstreamMalformedError(`an answer longer than ${maxBytes} bytes`)
  return text
}

/**
 * The total deadlines of all open exchanges, and whether their clients went away, checked by one
 * timer: a timer per request cost about a tenth of the proxy's throughput, a total deadline
 * (minutes) needs no millisecond precision, and a whole answer stopped 25 ms after its client left
 * costs little. Listening for each client's abort cost the hot path more than sweeping does; a
 * stream still listens (`followClient`), as a chunk read after its client left would be billed.
 */
const openExchanges = new Set<UpstreamExchange>()
let sweeper: ReturnType<typeof setInterval> | undefined

function sweepDeadlines(): void {
  const now = performance.now()
  for (const exchange of openExchanges) exchange.check(now)
  if (openExchanges.size === 0) {
    clearInterval(sweeper)
    sweeper = undefined
  }
}

/**
 * One HTTP exchange with an upstream and its deadlines. The fetch is aborted when the client goes
 * away (at once with `followClient`, else within 25 ms), when the total deadline passes, or when
 * the watched deadline (connect, first token or idle) passes; `failure()` then tells which, as the
 * error to throw.
 */
export class UpstreamExchange {
  readonly startedAt = performance.now()
  private readonly controller = new AbortController()
  private readonly totalDeadline: number
  private expired: GatewayError | null = null
  private watched: { kind: TimeoutKind; ms: number; deadline: number } | null = null
  private watchTimer: ReturnType<typeof setTimeout> | undefined
  private watchTimerAt = Number.POSITIVE_INFINITY
  private closed = false
  private bodyRead = false

  private onClientAbort: (() => void) | null = null

  constructor(
    private readonly call: ProviderCall,
    { followClient = false } = {},
  ) {
    this.totalDeadline = this.startedAt + call.deployment.timeouts.totalMs
    openExchanges.add(this)
    sweeper ??= setInterval(sweepDeadlines, sweepEveryMs)
    if (followClient) {
      this.onClientAbort = () => this.controller.abort(call.signal.reason)
      call.signal.addEventListener('abort', this.onClientAbort, { once: true })
    }
  }

  /** Aborts the exchange once its client has gone away, or expires it once its total deadline has passed. */
  check(now: number): void {
    if (this.call.signal.aborted) {
      if (!this.controller.signal.aborted) this.controller.abort(this.call.signal.reason)
    } else if (now >= this.totalDeadline) this.expire('total', this.call.deployment.timeouts.totalMs)
  }

  /** The whole response body was read: closing need not abort the connection, which stays reusable. */
  markBodyRead(): void {
    this.bodyRead = true
  }

  /** Fails the exchange unless it progresses within `ms` of `from` (now by default). */
  watch(kind: TimeoutKind, ms: number, from: number = performance.now()): void {
    const deadline = from + ms
    this.watched = { kind, ms, deadline }
    if (deadline < this.watchTimerAt) this.scheduleWatch(deadline)
  }

  /** Stops the watched deadline; the total deadline stays. */
  unwatch(): void {
    this.watched = null
  }

  private scheduleWatch(at: number): void {
    clearTimeout(this.watchTimer)
    this.watchTimerAt = at
    this.watchTimer = setTimeout(this.checkWatch, Math.max(0, at - performance.now()))
  }

  /** Timers are re-armed lazily: moving a deadline later costs nothing until the old timer fires. */
  private readonly checkWatch = (): void => {
    this.watchTimer = undefined
    this.watchTimerAt = Number.POSITIVE_INFINITY
    const watched = this.watched
    if (!watched || this.closed) return
    if (performance.now() >= watched.deadline) this.expire(watched.kind, watched.ms)
    else this.scheduleWatch(watched.deadline)
  }

  private expire(kind: TimeoutKind, ms: number): void {
    if (this.closed || this.expired || this.controller.signal.aborted) return
    this.expired = upstreamTimeoutError(kind, ms)
    this.controller.abort(this.expired)
  }

  /** The error to throw for something that went wrong during the exchange. */
  failure(error: unknown, midStream: boolean): unknown {
    if (this.expired) return this.expired
    if (this.call.signal.aborted) return this.call.signal.reason ?? error
    if (error instanceof GatewayError) return error
    return upstreamUnreachableError(midStream)
  }

  /** POSTs JSON to `${baseUrl}${path}`; resolves with a 2xx response, throws a GatewayError otherwise. */
  async post(path: string, payload: unknown, accept: string): Promise<Response> {
    const { deployment, signal } = this.call
    if (signal.aborted) throw signal.reason
    const headers: Record<string, string> = { 'content-type': 'application/json', accept, 'x-request-id': this.call.requestId }
    if (this.call.traceparent !== undefined) headers.traceparent = this.call.traceparent
    if (deployment.apiKeyEnv) {
      const key = process.env[deployment.apiKeyEnv]
      if (!key) throw new GatewayError('service_unavailable', "The gateway has no credentials for this model's upstream.")
      headers.authorization = `Bearer ${key}`
    }
    let response: Response
    // The requests of a turn are sent together at its end: fetch's thread then wakes once for them
    // rather than once each (bun bench/scenario.ts, embedded, two runs each: the main thread 71.7 and
    // 79.9 us a request against 85.9 and 86.7, fetch's thread 17.4 and 19.6 against 26.1 and 27.0).
    await endOfTurn()
    if (signal.aborted) throw signal.reason
    try {
      response = await fetch(`${deployment.baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(payload), signal: this.controller.signal })
    } catch (error) {
      throw this.failure(error, false)
    }
    if (response.ok) return response
    const body = await this.readErrorBody(response)
    throw upstreamStatusError(response.status, body, response.headers.get('retry-after'), { upstreamModel: deployment.upstreamModel, modelId: this.call.model.id })
  }

  /**
   * Reads a whole 2xx body as text, at most `maxAnswerBytes`: one that declares its length within
   * the limit is read at once, one without a length is counted as it arrives.
   */
  async text(response: Response): Promise<string> {
    try {
      const declared = response.headers.get('content-length')
      if (declared !== null && Number(declared) > maxAnswerBytes) throw upstreamMalformedError(`an answer of ${declared} bytes, above the limit of ${maxAnswerBytes}`)
      const text = declared !== null ? await response.text() : await readCapped(response, maxAnswerBytes)
      this.bodyRead = true
      return text
    } catch (error) {
      throw this.failure(error, true)
    }
  }

  private async readErrorBody(response: Response): Promise<string> {
    const { text, error } = await readUpTo(response, maxErrorBodyBytes)
    if (error !== undefined && (this.expired || this.call.signal.aborted)) throw this.failure(error, false)
    return text
  }

  /** Releases the deadlines and the client-abort listener, and aborts the fetch if its body is still open. */
  close(): void {
    if (this.closed) return
    this.closed = true
    openExchanges.delete(this)
    clearTimeout(this.watchTimer)
    if (this.onClientAbort) this.call.signal.removeEventListener('abort', this.onClientAbort)
    if (!this.bodyRead) this.controller.abort()
  }
}
