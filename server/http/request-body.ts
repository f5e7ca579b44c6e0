import { GatewayError } from '@nilegate/shared/errors'

/** Body caps of SPEC 8.2. */
export const inferenceBodyLimitBytes = 32 * 1024 * 1024
export const defaultBodyLimitBytes = 10 * 1024 * 1024
/** Deeper JSON than this is refused: nothing legitimate nests so far, and deep values are costly to walk. */
export const maxJsonDepth = 128

/** Bytes of request bodies being received at once, across all requests of this process. */
export class BodyBudget {
  private inFlightBytes = 0

  constructor(readonly limitBytes: number) {}

  /** Takes `bytes` from the budget, or answers 503 large_request_backpressure. */
  take(bytes: number): void {
    if (this.inFlightBytes + bytes > this.limitBytes) throw new GatewayError('large_request_backpressure')
    this.inFlightBytes += bytes
  }

  give(bytes: number): void {
    this.inFlightBytes -= bytes
  }

  get used(): number {
    return this.inFlightBytes
  }
}

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

async function readCounted(request: Request, limitBytes: number, budget: BodyBudget): Promise<Uint8Array> {
  const reader = request.body?.getReader()
  if (!reader) return new Uint8Array(0)
  const parts: Uint8Array[] = []
  let total = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
      if (total > limitBytes) throw tooLarge(limitBytes, null)
      budget.take(value.byteLength)
      parts.push(value)
    }
  } catch (error) {
    reader.cancel().catch(() => {})
    throw error
  } finally {
    budget.give(parts.reduce((sum, part) => sum + part.byteLength, 0))
  }
  return Buffer.concat(parts)
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Reads a JSON body within the route's cap: a declared Content-Length over the cap is refused
 * before reading, a chunked body is counted as it arrives, and the bytes in flight are held
 * against the process-wide budget. Size and budget errors are thrown; unreadable JSON comes back
 * as a BodyProblem so that authentication errors can take precedence.
 */
export async function readJsonBody(request: Request, limitBytes: number, budget: BodyBudget): Promise<unknown> {
  const lengthHeader = request.headers.get('content-length')
  let bytes: Uint8Array
  if (lengthHeader !== null) {
    const declared = Number(lengthHeader)
    if (!Number.isSafeInteger(declared) || declared < 0) throw new GatewayError('invalid_request', 'Content-Length is not a valid byte count.')
    if (declared > limitBytes) throw tooLarge(limitBytes, declared)
    budget.take(declared)
    try {
      bytes = new Uint8Array(await request.arrayBuffer())
    } finally {
      budget.give(declared)
    }
  } else {
    bytes = await readCounted(request, limitBytes, budget)
  }
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
