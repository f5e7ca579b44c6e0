import OpenAI from 'openai'

/** One HTTP exchange the SDK made, as it went over the wire. */
export interface RecordedExchange {
  url: string
  /** The JSON the SDK sent, parsed; null for bodiless requests. */
  requestBody: Record<string, unknown> | null
  status: number
  requestId: string | null
  /** The raw response text of JSON answers (read from a clone, so the SDK still gets the body). */
  responseText: Promise<string> | null
}

/**
 * The official `openai` client pointed at a gateway, with its fetch wrapped so that tests can see
 * what went over the wire: request bodies, statuses and X-Request-Id headers. No retries, so a
 * failing call fails at once.
 */
export function recordingClient(baseURL: string, apiKey: string) {
  const exchanges: RecordedExchange[] = []
  const client = new OpenAI({
    baseURL,
    apiKey,
    maxRetries: 0,
    timeout: 15_000,
    fetch: async (url: string | URL | Request, init?: RequestInit) => {
      const response = await fetch(url, init)
      const isJson = response.headers.get('content-type')?.includes('application/json') ?? false
      exchanges.push({
        url: String(url),
        requestBody: typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : null,
        status: response.status,
        requestId: response.headers.get('x-request-id'),
        responseText: isJson ? response.clone().text() : null,
      })
      return response
    },
  })
  return {
    client,
    exchanges,
    /** The latest exchange; throws when there was none. */
    last(): RecordedExchange {
      const exchange = exchanges.at(-1)
      if (!exchange) throw new Error('the client has made no request yet')
      return exchange
    },
  }
}

/** The error a call fails with; throws when it succeeds. */
export async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call
  } catch (error) {
    return error
  }
  throw new Error('expected the call to fail, but it succeeded')
}

/** The parts of an SDK error a test compares. */
export function errorSummary(error: unknown) {
  if (!(error instanceof OpenAI.APIError)) throw error
  return { status: error.status, code: error.code, param: error.param }
}

/** The Euclidean length of a vector. */
export function l2Norm(vector: ArrayLike<number>): number {
  let sum = 0
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!
  return Math.sqrt(sum)
}
