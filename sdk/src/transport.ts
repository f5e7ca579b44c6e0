import { NilegateConnectionError, NilegateTimeoutError, parseRetryAfter } from './errors'

/** A `fetch` as the client calls it: the platform's, or one passed in options. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

export interface TransportOptions {
  fetch: FetchLike
  /** Retries after the first attempt. */
  maxRetries: number
  /** Per attempt: until the whole body of a JSON answer, or the headers of a stream. */
  timeoutMs: number
}

/** Statuses worth another attempt: the gateway asks to slow down, or failed in a way that may pass. */
const retriedStatuses = new Set([429, 500, 503])
const initialDelayMs = 500
const maxDelayMs = 8_000
/** A `Retry-After` longer than this is not waited for inside a call: the error reaches the caller. */
const maxRetryAfterS = 60

/**
 * How long to wait before retry number `attempt` (0 for the first) when the gateway said nothing:
 * exponential backoff from 0.5 s to 8 s, less up to 25% at random, so that clients which failed
 * together do not come back together.
 */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  return Math.min(initialDelayMs * 2 ** attempt, maxDelayMs) * (1 - 0.25 * random())
}

/** The wait before retrying an answer: its `Retry-After` when it has one, else backoff; null when it asks for too long a wait. */
export function retryDelayMs(attempt: number, retryAfterS: number | null): number | null {
  if (retryAfterS === null) return backoffMs(attempt)
  return retryAfterS <= maxRetryAfterS ? retryAfterS * 1000 : null
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
function sleep(ms: number, signal: AbortSignal | null | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const done = () => {
      signal?.removeEventListener('abort', abort)
      resolve()
    }
    const abort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', abort, { once: true })
  })
}

/** A signal that fires when `outer` (the caller's) or the attempt's own controller fires; `release` unhooks it. */
function linkedSignal(outer: AbortSignal | null | undefined, inner: AbortController): { signal: AbortSignal; release: () => void } {
  if (!outer) return { signal: inner.signal, release: () => {} }
  const forward = () => inner.abort(outer.reason)
  if (outer.aborted) forward()
  else outer.addEventListener('abort', forward, { once: true })
  return { signal: inner.signal, release: () => outer.removeEventListener('abort', forward) }
}

const isEventStream = (response: Response) => response.headers.get('content-type')?.startsWith('text/event-stream') ?? false

/** The answer with its body read in full, so that reading it counts against the attempt's timeout. */
async function buffered(response: Response): Promise<Response> {
  const body = await response.arrayBuffer()
  return new Response(body.byteLength === 0 ? null : body, response)
}

/** A random key that makes retries of one POST safe: the gateway replays the first answer to the same key. */
function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return `ng-retry-${Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')}`
}

/**
 * The client's `fetch`: one attempt per try with its own timeout, retried with backoff on 429,
 * 500, 503, broken connections and timeouts, never on other statuses. A JSON answer is read in
 * full within the timeout, so a connection that breaks mid-body is retried as well; a stream is
 * handed over once its headers arrive and is never retried after that. A POST carries one
 * `Idempotency-Key` across its attempts. The caller's abort ends everything with its reason.
 */
export function createTransport({ fetch: send, maxRetries, timeoutMs }: TransportOptions): FetchLike {
  return async (input, init = {}) => {
    const headers = new Headers(init.headers)
    if (init.method === 'POST' && !headers.has('idempotency-key')) headers.set('idempotency-key', idempotencyKey())
    const outer = init.signal
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController()
      const { signal, release } = linkedSignal(outer, controller)
      const timer = setTimeout(() => controller.abort(new NilegateTimeoutError(timeoutMs)), timeoutMs)
      let waitMs: number
      let streaming = false
      try {
        const response = await send(input, { ...init, headers, signal })
        const retryable = retriedStatuses.has(response.status) && attempt < maxRetries
        const delayMs = retryable ? retryDelayMs(attempt, parseRetryAfter(response.headers.get('retry-after'))) : null
        if (delayMs === null) {
          // A stream outlives this call: the caller's signal must still reach it.
          streaming = isEventStream(response)
          return streaming ? response : await buffered(response)
        }
        await response.body?.cancel()
        waitMs = delayMs
      } catch (error) {
        if (outer?.aborted) throw outer.reason
        const failure = controller.signal.aborted ? (controller.signal.reason as NilegateTimeoutError) : new NilegateConnectionError(undefined, { cause: error })
        if (attempt >= maxRetries) throw failure
        waitMs = backoffMs(attempt)
      } finally {
        clearTimeout(timer)
        if (!streaming) release()
      }
      await sleep(waitMs, outer)
    }
  }
}
