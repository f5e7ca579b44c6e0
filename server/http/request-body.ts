import { GatewayError } from '@nilegate/shared/errors'
import type { BodyBudget } from './body-budget'
import { bodyTimedOut, type BodyIdleWatch } from './body-idle-watch'

/** Body caps of SPEC 8.2. */
export const inferenceBodyLimitBytes = 32 * 1024 * 1024
export const defaultBodyLimitBytes = 10 * 1024 * 1024
/**
 * How long a body may go without a chunk before it is dropped with 408. Longer than TCP takes to
 * resend four lost segments in a row (about 1 + 2 + 4 + 8 s), so a poor link that recovers is not
 * cut; short enough that a client holding bodies open gives their budget back within half a minute.
 */
export const bodyIdleTimeoutMs = 20_000
/**
 * Bodies of at most this many declared bytes are read whole, and must arrive whole within the idle
 * timeout (at 3.2 KiB/s): a stream reader costs about 25 us more a request on Bun, most of what a
 * chat request costs. Larger and chunked bodies are read chunk by chunk, each chunk resetting it.
 */
export const wholeBodyMaxBytes = 64 * 1024
const inferencePaths = new Set(['/v1/chat/completions', '/v1/embeddings'])

/** The cap of SPEC 8.2 for a path: 32 MiB on the inference routes, 10 MiB elsewhere. */
export function bodyLimitFor(path: string): number {
  return inferencePaths.has(path) ? inferenceBodyLimitBytes : defaultBodyLimitBytes
}

/**
 * The body of a request that is read only once its credential has been checked from the headers:
 * the parser leaves this in its place, and the route's authentication reads the body after it
 * (`BodyReader.readFor`), so that no byte is read or budgeted for a request answered 401.
 */
export const unreadBody: unknown = Object.freeze({ unread: 'read after authentication' })

const readsBodyMark = Symbol('reads the body after authentication')

/**
 * Marks an authentication hook (a `derive`) that reads an `unreadBody` once it has let the request
 * in: the parser leaves the body of every route that has such a hook unread (see app.ts).
 */
export function readsBodyAfterAuth<T extends (...args: never[]) => unknown>(hook: T): T {
  return Object.assign(hook, { [readsBodyMark]: true })
}

/** Whether a hook was marked by `readsBodyAfterAuth`. */
export function isReadingBodyAfterAuth(hook: unknown): boolean {
  return typeof hook === 'function' && readsBodyMark in hook
}

/** Deeper JSON than this is refused: nothing legitimate nests so far, and deep values are costly to walk. */
export const maxJsonDepth = 128

/** A body that could not be read as JSON; reported after authentication, which takes precedence. */
export class BodyProblem {
  constructor(readonly error: GatewayError) {}
}

function tooLarge(limitBytes: number, declaredBytes: number | null): GatewayError {
  const declared = declaredBytes === null ? 'The body' : `The body is ${declaredBytes} bytes (Content-Length), which`
  return new GatewayError(
    'request_too_large',
    `${declared} exceeds the limit of ${limitBytes} bytes for this route. Drop earlier turns or tool outputs, or shrink attachments.`,
  )
}

/**
 * Whether JSON text nests deeper than `maxDepth`, skipping brackets inside strings. Strings are
 * skipped with `indexOf` to their closing quote (one not escaped by an odd run of backslashes):
 * most of a chat body is message text, which a byte-by-byte loop made cost as much as parsing it.
 */
export function nestsDeeperThan(bytes: Uint8Array, maxDepth: number): boolean {
  let depth = 0
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]
    if (byte === 0x22) {
      for (;;) {
        const close = bytes.indexOf(0x22, i + 1)
        // Unterminated: the parser refuses it.
        if (close === -1) return false
        let backslashes = 0
        while (bytes[close - 1 - backslashes] === 0x5c) backslashes++
        i = close
        if (backslashes % 2 === 0) break
      }
    } else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > maxDepth) return true
    } else if (byte === 0x7d || byte === 0x5d) depth--
  }
  return false
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** What a body's bytes are as JSON: an object, or the BodyProblem that tells the client why not. */
function parseJsonBody(bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0) return new BodyProblem(new GatewayError('invalid_request', 'The request body is empty; send a JSON object.'))
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return new BodyProblem(new GatewayError('invalid_request', 'The request body is not valid UTF-8.'))
  }
  if (nestsDeeperThan(bytes, maxJsonDepth)) {
    return new BodyProblem(new GatewayError('invalid_request', `The JSON body nests deeper than ${maxJsonDepth} levels.`))
  }
  try {
    const value: unknown = JSON.parse(text)
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return new BodyProblem(new GatewayError('invalid_request', 'The request body must be a JSON object.'))
    }
    return value
  } catch (error) {
    return new BodyProblem(new GatewayError('invalid_request', `The request body is not valid JSON: ${(error as Error).message}`))
  }
}

/**
 * Reads JSON request bodies within their route's cap, holding their bytes against the budget in
 * the name of a client, and dropping (408) those that stop arriving.
 */
export class BodyReader {
  constructor(
    readonly budget: BodyBudget,
    readonly idle: BodyIdleWatch,
  ) {}

  /**
   * The body of a request the parser left unread (`unreadBody`), read for `client` (the hash of an
   * API key, a user id) whose credential its authentication has just let in. Takes the parts of the
   * context rather than the context: Elysia prepares every part of it (query, cookies) for a hook
   * that hands the whole context on.
   */
  readFor(request: Request, path: string, headers: Record<string, unknown>, client: string): Promise<unknown> {
    return this.read(request, bodyLimitFor(path), client, false, headers)
  }

  /**
   * The body as JSON: a declared Content-Length over the cap is refused before reading, and
   * held against the budget whole; a chunked body is counted and held as it arrives. Size, budget
   * and idle errors are thrown; unreadable JSON comes back as a BodyProblem so that authentication
   * and authorization errors can take precedence. A body that times out answers 408 and closes its
   * connection, since the rest of it may still come.
   *
   * Not itself async: it hands back the promise of `readWhole` or `readStream` as it is. An async
   * function that returns another async function's promise takes extra turns of the microtask
   * queue to adopt it: 0.4 to 1.3 us more a chat body, measured on `readFor` of 173-byte bodies.
   */
  read(request: Request, limitBytes: number, client: string, anonymous: boolean, headers: Record<string, unknown>): Promise<unknown> {
    let declared: number | null
    try {
      declared = declaredLength(request, limitBytes)
    } catch (error) {
      return Promise.reject(error)
    }
    if (declared === 0) return Promise.resolve(parseJsonBody(new Uint8Array(0)))
    // Before `request.body`, which makes Bun build the stream.
    if (declared !== null && declared <= wholeBodyMaxBytes) return this.readWhole(request, declared, client, anonymous, headers)
    return this.readStream(request, limitBytes, declared, client, anonymous, headers)
  }

  private async readStream(request: Request, limitBytes: number, declared: number | null, client: string, anonymous: boolean, headers: Record<string, unknown>): Promise<unknown> {
    const stream = request.body
    if (stream === null) return parseJsonBody(new Uint8Array(0))
    if (declared !== null) this.budget.take(declared, client, anonymous)
    let held = declared ?? 0
    const reader = stream.getReader()
    const watched = this.idle.watch(reader)
    let first: Uint8Array | null = null
    let rest: Uint8Array[] | null = null
    let total = 0
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (watched.timedOut) throw this.timedOut(headers, total)
        if (done) break
        watched.chunks++
        total += value.byteLength
        if (total > limitBytes) throw tooLarge(limitBytes, null)
        if (declared === null) {
          this.budget.take(value.byteLength, client, anonymous)
          held += value.byteLength
        }
        if (first === null) first = value
        else (rest ??= [first]).push(value)
      }
    } catch (error) {
      reader.cancel().catch(() => {})
      throw error
    } finally {
      this.idle.unwatch(watched)
      this.budget.give(held, client, anonymous)
    }
    return parseJsonBody(rest !== null ? Buffer.concat(rest) : (first ?? new Uint8Array(0)))
  }

  private async readWhole(request: Request, declared: number, client: string, anonymous: boolean, headers: Record<string, unknown>): Promise<unknown> {
    this.budget.take(declared, client, anonymous)
    try {
      const whole = await this.idle.watchWhole(request.arrayBuffer())
      if (whole === bodyTimedOut) throw this.timedOut(headers, 0)
      return parseJsonBody(new Uint8Array(whole))
    } finally {
      this.budget.give(declared, client, anonymous)
    }
  }

  // The rest of the body may still come: the connection is closed after the answer.
  private timedOut(headers: Record<string, unknown>, receivedBytes: number): GatewayError {
    headers.connection = 'close'
    return new GatewayError(
      'request_timeout',
      `The request body stopped arriving${receivedBytes > 0 ? ` after ${receivedBytes} bytes` : ''}: it was not complete within ${this.idle.idleTimeoutMs / 1000} s of its last part. Send the request again.`,
    )
  }
}

/**
 * The Content-Length of a request, or null when it has none (chunked); 400 when it is not a byte
 * count, 413 when it is over `limitBytes`. Reads only the headers.
 */
export function declaredLength(request: Request, limitBytes: number): number | null {
  const lengthHeader = request.headers.get('content-length')
  if (lengthHeader === null) return null
  const declared = Number(lengthHeader)
  if (!Number.isSafeInteger(declared) || declared < 0) throw new GatewayError('invalid_request', 'Content-Length is not a valid byte count.')
  if (declared > limitBytes) throw tooLarge(limitBytes, declared)
  return declared
}
