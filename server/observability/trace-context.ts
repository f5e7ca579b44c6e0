/** A W3C trace context (https://www.w3.org/TR/trace-context/) as the gateway passes it on. */
export interface TraceContext {
  traceId: string
  /** The `traceparent` to send upstream: the caller's trace, with the gateway's call as its parent. */
  traceparent: string
}

// version 00: 2 hex digits each for version and flags, 32 for the trace id, 16 for the parent id.
const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const invalidTraceId = '0'.repeat(32)
const invalidParentId = '0'.repeat(16)

/** A span id for the gateway's call: 8 random bytes as hex, never all zeros. */
function newSpanId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8))
  bytes[7] ||= 1
  return Buffer.from(bytes).toString('hex')
}

/**
 * The trace a request's `traceparent` header names, continued with a span id of the gateway's
 * own, or null without a valid header (version 00, ids not all zeros): the gateway starts no trace.
 */
export function continueTrace(header: string | null): TraceContext | null {
  if (header === null) return null
  const match = traceparentPattern.exec(header.trim())
  if (!match || match[1] === invalidTraceId || match[2] === invalidParentId) return null
  const [, traceId, , flags] = match
  return { traceId: traceId!, traceparent: `00-${traceId}-${newSpanId()}-${flags}` }
}
