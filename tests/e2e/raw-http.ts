import type { Socket } from 'bun'

/** An HTTP/1.1 response as read off a raw socket. */
export interface RawResponse {
  status: number
  headers: Headers
  body: string
  /** Request body bytes the socket accepted before the answer was complete. */
  bytesSent: number
}

export interface RawExchange {
  hostname: string
  port: number
  /** The request line and headers, without the blank line that ends them. */
  head: string
  /** Body bytes, written in order with back-pressure; writing stops as soon as the answer is complete. */
  body?: Iterable<Uint8Array>
  timeoutMs: number
}

const headerEnd = '\r\n\r\n'

/** The complete response in `buffer`, or null while more bytes are needed. */
function parseResponse(buffer: Buffer, closed: boolean): Omit<RawResponse, 'bytesSent'> | null {
  const end = buffer.indexOf(headerEnd)
  if (end === -1) return null
  const [statusLine, ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1])
  const headers = new Headers()
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  const rest = buffer.subarray(end + headerEnd.length)
  const length = headers.get('content-length')
  if (length !== null) return rest.byteLength >= Number(length) ? { status, headers, body: rest.subarray(0, Number(length)).toString('utf8') } : null
  if (headers.get('transfer-encoding')?.toLowerCase() === 'chunked') {
    const parts: Buffer[] = []
    let offset = 0
    for (;;) {
      const lineEnd = rest.indexOf('\r\n', offset)
      if (lineEnd === -1) return null
      const size = parseInt(rest.subarray(offset, lineEnd).toString('latin1'), 16)
      if (size === 0) return { status, headers, body: Buffer.concat(parts).toString('utf8') }
      if (rest.byteLength < lineEnd + 2 + size + 2) return null
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size))
      offset = lineEnd + 2 + size + 2
    }
  }
  return closed ? { status, headers, body: rest.toString('utf8') } : null
}

/**
 * Sends bytes exactly as given over a fresh TCP connection and reads one response, for requests
 * `fetch` will not make: a Content-Length without its body, an endless chunked body. Rejects when
 * no complete answer arrives within `timeoutMs` or the server closes the connection without one.
 */
export function rawExchange(exchange: RawExchange): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0)
    let settled = false
    let bytesSent = 0
    let socket: Socket | null = null
    let wake: (() => void) | null = null
    const settle = (outcome: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      wake?.()
      socket?.end()
      outcome()
    }
    const timer = setTimeout(
      () => settle(() => reject(new Error(`no complete response within ${exchange.timeoutMs} ms; received ${JSON.stringify(received.toString('latin1').slice(0, 500))}`))),
      exchange.timeoutMs,
    )
    const tryFinish = (closed: boolean) => {
      const response = parseResponse(received, closed)
      if (response) settle(() => resolve({ ...response, bytesSent }))
      else if (closed) settle(() => reject(new Error(`the server closed the connection without a complete response: ${JSON.stringify(received.toString('latin1').slice(0, 500))}`)))
    }

    // Writes all of `bytes`, waiting for drain when the socket takes only part of them.
    const writeAll = async (open: Socket, bytes: Uint8Array) => {
      let offset = 0
      while (offset < bytes.byteLength && !settled) {
        const written = open.write(bytes.subarray(offset))
        // The server stopped reading (closed): the answer, or its absence, decides the outcome.
        if (written < 0) return
        offset += written
        bytesSent += written
        if (offset < bytes.byteLength) await new Promise<void>((resolveDrain) => (wake = resolveDrain))
      }
    }

    Bun.connect({
      hostname: exchange.hostname,
      port: exchange.port,
      socket: {
        data(_, chunk) {
          received = Buffer.concat([received, chunk])
          tryFinish(false)
        },
        drain() {
          const resume = wake
          wake = null
          resume?.()
        },
        close() {
          tryFinish(true)
        },
        error(_, error) {
          settle(() => reject(error))
        },
      },
    })
      .then(async (open) => {
        socket = open
        if (settled) return open.end()
        await writeAll(open, Buffer.from(`${exchange.head}${headerEnd}`, 'latin1'))
        bytesSent = 0
        for (const part of exchange.body ?? []) {
          if (settled) break
          await writeAll(open, part)
        }
      })
      .catch((error: unknown) => settle(() => reject(error)))
  })
}
