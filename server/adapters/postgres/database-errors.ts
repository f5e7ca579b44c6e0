import { GatewayError } from '@nilegate/shared/errors'

// postgres.js's own codes for a connection it lost or could not make, and the system's.
const connectionFailureCodes = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])

// SQLSTATEs of a server that is going away, starting, or out of connections: class 08 (connection
// exception), 57P01-57P03 (shut down, crash shutdown, cannot connect now), 53300 (too many connections).
const outageStates = new Set(['57P01', '57P02', '57P03', '53300'])

/** The error and the causes under it, as far as they go (a cause that is itself ends the walk). */
function* causeChain(error: unknown): Generator<{ code?: unknown; message?: unknown; cause?: unknown }> {
  const seen = new Set<unknown>()
  for (let current = error; typeof current === 'object' && current !== null && !seen.has(current); current = (current as { cause?: unknown }).cause) {
    seen.add(current)
    yield current as { code?: unknown; message?: unknown; cause?: unknown }
  }
}

/** Whether `error` (or what caused it) says the database could not be reached or is going away, rather than that a statement failed. */
export function isDatabaseOutage(error: unknown): boolean {
  for (const link of causeChain(error)) {
    const code = link.code
    if (typeof code !== 'string') continue
    if (connectionFailureCodes.has(code) || outageStates.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true
  }
  return false
}

/**
 * A statement that failed, told without its text or parameters: drizzle's error carries both in
 * its message and fields ("Failed query: ... params: ..."), and the parameters of identity lookups
 * are key and session hashes, which have no place in a log.
 */
export class DatabaseStatementFailed extends Error {
  override name = 'DatabaseStatementFailed'
  readonly code: string | undefined

  constructor(cause: { code?: unknown; message?: unknown }) {
    const code = typeof cause.code === 'string' ? cause.code : undefined
    super(`the database refused a statement: ${typeof cause.message === 'string' ? cause.message : 'no reason given'}${code ? ` (${code})` : ''}`)
    this.code = code
  }
}

/** What to say in a log about a database error: its cause's message and code, never the statement or its parameters. */
export function describeDatabaseError(error: unknown): string {
  let innermost: { code?: unknown; message?: unknown } | undefined
  for (const link of causeChain(error)) innermost = link
  const message = typeof innermost?.message === 'string' && !innermost.message.startsWith('Failed query:') ? innermost.message : 'no reason given'
  return typeof innermost?.code === 'string' ? `${message} (${innermost.code})` : message
}

/** How often an outage is logged at most: every request fails the same way while it lasts. */
const outageLogIntervalMs = 10_000

/**
 * Wraps stores so that every promise they answer is made fit for callers outside the adapter: a database that
 * cannot be reached rejects with 503 service_unavailable (Retry-After from the catalog), logged
 * once per 10 s with its cause only; a statement that fails rejects with DatabaseStatementFailed,
 * which keeps the cause's message and code and drops the statement and its parameters. Errors the
 * repositories made themselves (GatewayError: conflicts, not found) pass unchanged.
 */
export function answeringOutages(log: (message: string) => void = (message) => console.error(message)): <T extends object>(store: T) => T {
  // One clock for every store of a database: an outage fails them all at once.
  let lastLoggedMs = Number.NEGATIVE_INFINITY
  const translate = (error: unknown): never => {
    if (error instanceof GatewayError) throw error
    if (isDatabaseOutage(error)) {
      const now = performance.now()
      if (now - lastLoggedMs >= outageLogIntervalMs) {
        lastLoggedMs = now
        log(`the database is not answering (${describeDatabaseError(error)}); requests that need it get 503 service_unavailable`)
      }
      throw new GatewayError('service_unavailable', 'The database is not answering. Retry in 30 to 60 seconds.')
    }
    const query = (error as { query?: unknown } | null)?.query
    if (typeof query === 'string') {
      const cause = (error as { cause?: unknown }).cause
      throw new DatabaseStatementFailed(typeof cause === 'object' && cause !== null ? cause : { message: describeDatabaseError(error) })
    }
    throw error
  }
  return (store) => new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        let answer: unknown
        try {
          answer = value.apply(target, args)
        } catch (error) {
          translate(error)
        }
        return answer instanceof Promise ? answer.catch(translate) : answer
      }
    },
  })
}
