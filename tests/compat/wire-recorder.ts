/** One HTTP exchange a client made, as it went over the wire. */
export interface WireExchange {
  method: string
  /** The URL's path, e.g. `/v1/chat/completions`. */
  path: string
  requestHeaders: Headers
  /** The JSON the client sent, parsed; null for bodiless requests. */
  requestBody: unknown
  status: number
  responseHeaders: Headers
  /** `performance.now()` when the client called fetch, and when the response's headers arrived. */
  sentAtMs: number
  answeredAtMs: number
  /** The whole response body, read from a clone, so the client still reads the original itself. */
  body: Promise<string>
}

async function requestText(input: string | URL | Request, init: RequestInit | undefined): Promise<string | null> {
  if (input instanceof Request) return input.body ? input.clone().text() : null
  if (typeof init?.body === 'string') return init.body
  if (init?.body instanceof Uint8Array) return new TextDecoder().decode(init.body)
  if (init?.body == null) return null
  throw new Error(`the recorder cannot read a request body of type ${init.body.constructor.name}`)
}

/**
 * A `fetch` to hand to a client library's own fetch option: it forwards every call to the real
 * fetch unchanged and keeps what went over the wire, so tests see the bodies the client received.
 */
export function recordWire() {
  const exchanges: WireExchange[] = []
  const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input)
    const sent = await requestText(input, init)
    const sentAtMs = performance.now()
    const response = await fetch(input, init)
    exchanges.push({
      method: (input instanceof Request ? input.method : init?.method) ?? 'GET',
      path: url.pathname,
      requestHeaders: new Headers(input instanceof Request ? input.headers : init?.headers),
      requestBody: sent === null ? null : (JSON.parse(sent) as unknown),
      status: response.status,
      responseHeaders: response.headers,
      sentAtMs,
      answeredAtMs: performance.now(),
      body: response.clone().text(),
    })
    return response
  }
  return {
    exchanges,
    /** Typed as the global fetch (with Bun's `preconnect`), which is what the libraries ask for. */
    fetch: Object.assign(recordingFetch, { preconnect: fetch.preconnect }),
  }
}

/** A wire recorder and what it has recorded. */
export type WireRecorder = ReturnType<typeof recordWire>
