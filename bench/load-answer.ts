// Reading one answer of an OpenAI-compatible endpoint as cheaply as a load tool must: a stream is
// searched as bytes for a few needles, and only the events that carry usage or an error are decoded
// and parsed, so the tool's own CPU stays small beside the server's (regular expressions over the
// decoded text cost about twice as much).

/** What one answer was, read to its last byte. */
export interface Answer {
  status: number
  /** 2xx, and no error event in a stream. */
  isOk: boolean
  /** The OpenAI envelope's `error.code` of a failed answer (`error.type` when it has no code), or why there is none. */
  errorCode: string | null
  /** Whether the error came as an event inside a 200 stream. */
  isErrorInStream: boolean
  /** From sending to the first event carrying generated text; null unless streamed. */
  ttftMs: number | null
  /** `usage.completion_tokens`, or the content-bearing events of a stream without usage; null when neither. */
  outputTokens: number | null
  isCountedFromUsage: boolean
  /** `usage.prompt_tokens` when the answer reports it. */
  promptTokens: number | null
  bytes: number
}

const NO_CODE = '(no code)'
const NOT_AN_ENVELOPE = '(not an OpenAI error)'
const completionTokens = /"completion_tokens"\s*:\s*(\d+)/
const promptTokens = /"prompt_tokens"\s*:\s*(\d+)/

/** The code an OpenAI error body names: `error.code`, else `error.type`, else why neither. */
export function errorCodeOf(text: string): string {
  try {
    const error = JSON.parse(text)?.error
    if (error === null || typeof error !== 'object') return NOT_AN_ENVELOPE
    if (error.code !== null && error.code !== undefined && error.code !== '') return String(error.code)
    return typeof error.type === 'string' && error.type !== '' ? error.type : NO_CODE
  } catch {
    return NOT_AN_ENVELOPE
  }
}

function numberIn(text: string, pattern: RegExp): number | null {
  const match = pattern.exec(text)
  return match ? Number(match[1]) : null
}

function parsedOrNull(text: string): any {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** Reads a whole answer; `sentAt` is `performance.now()` when the request went out; a stream is read as one when it was asked for. */
export async function readAnswer(response: Response, sentAt: number, isStreamAsked: boolean): Promise<Answer> {
  const isOkStatus = response.status >= 200 && response.status <= 299
  // Only looked at when asked for: reading headers and body streams costs a plain answer time.
  if (isStreamAsked && isOkStatus && (response.headers.get('content-type') ?? '').includes('text/event-stream')) return readStream(response, sentAt)
  // text() decodes in native code; a TextDecoder over arrayBuffer() cost the tool a tenth of its rate.
  const text = await response.text()
  return {
    status: response.status,
    isOk: isOkStatus,
    errorCode: isOkStatus ? null : errorCodeOf(text),
    isErrorInStream: false,
    ttftMs: null,
    outputTokens: isOkStatus ? numberIn(text, completionTokens) : null,
    isCountedFromUsage: isOkStatus && completionTokens.test(text),
    promptTokens: isOkStatus ? numberIn(text, promptTokens) : null,
    bytes: Buffer.byteLength(text),
  }
}

async function readStream(response: Response, sentAt: number): Promise<Answer> {
  const answer: Answer = {
    status: response.status,
    isOk: true,
    errorCode: null,
    isErrorInStream: false,
    ttftMs: null,
    outputTokens: null,
    isCountedFromUsage: false,
    promptTokens: null,
    bytes: 0,
  }
  let textEvents = 0
  // The lines one read completes are scanned together, as bytes: they arrived at the same time.
  const readLines = (lines: Buffer) => {
    const texts = countTextEvents(lines)
    if (texts > 0) {
      textEvents += texts
      answer.ttftMs ??= performance.now() - sentAt
    }
    const usageAt = indexOfAny(lines, usageNeedles)
    if (usageAt >= 0) {
      const usage = parsedOrNull(dataLineAround(lines, usageAt))?.usage
      if (typeof usage?.completion_tokens === 'number') {
        answer.outputTokens = usage.completion_tokens
        answer.isCountedFromUsage = true
      }
      if (typeof usage?.prompt_tokens === 'number') answer.promptTokens = usage.prompt_tokens
    }
    const errorAt = indexOfAny(lines, errorNeedles)
    if (errorAt >= 0) {
      answer.isOk = false
      answer.isErrorInStream = true
      answer.errorCode = errorCodeOf(dataLineAround(lines, errorAt))
    }
  }
  // A line cut between two reads waits for the rest.
  let pending: Buffer | null = null
  const reader = response.body!.getReader()
  for (;;) {
    // Bun's readMany hands over every chunk already queued at once, and without a promise when there are some.
    const pendingRead = reader.readMany()
    const read = pendingRead instanceof Promise ? await pendingRead : pendingRead
    const chunks = (read.value ?? []) as Uint8Array[]
    if (chunks.length > 0) {
      for (const chunk of chunks) answer.bytes += chunk.byteLength
      const bytes: Buffer = pending || chunks.length > 1 ? Buffer.concat(pending ? [pending, ...chunks] : chunks) : Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, chunks[0]!.byteLength)
      const end = bytes.lastIndexOf(NEWLINE)
      if (end < 0) {
        pending = bytes
      } else {
        readLines(bytes.subarray(0, end + 1))
        pending = end + 1 < bytes.length ? bytes.subarray(end + 1) : null
      }
    }
    if (read.done) break
  }
  if (pending) readLines(pending)
  if (!answer.isCountedFromUsage && answer.isOk) answer.outputTokens = textEvents
  return answer
}

const NEWLINE = 10
const QUOTE = 34
// Text in a delta (content, reasoning_content, tool-call arguments), not "": compact or spaced JSON.
const textNeedles = ['content":"', 'content": "', '"arguments":"', '"arguments": "'].map((needle) => Buffer.from(needle))
const usageNeedles = ['"usage":{', '"usage": {'].map((needle) => Buffer.from(needle))
const errorNeedles = ['data: {"error"', 'data:{"error"', 'data: { "error"'].map((needle) => Buffer.from(needle))

function countTextEvents(lines: Buffer): number {
  let count = 0
  for (const needle of textNeedles) {
    for (let at = lines.indexOf(needle); at >= 0; at = lines.indexOf(needle, at + needle.length)) {
      if (lines[at + needle.length] !== QUOTE) count++
    }
  }
  return count
}

function indexOfAny(lines: Buffer, needles: Buffer[]): number {
  for (const needle of needles) {
    const at = lines.lastIndexOf(needle)
    if (at >= 0) return at
  }
  return -1
}

/** The JSON of the `data:` line holding position `at`. */
function dataLineAround(lines: Buffer, at: number): string {
  const start = lines.lastIndexOf('data:', at)
  const end = lines.indexOf(NEWLINE, at)
  return lines.toString('utf8', start + 5, end < 0 ? undefined : end).trim()
}
