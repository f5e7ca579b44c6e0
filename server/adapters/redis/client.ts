import { GatewayError } from '@nilegate/shared/errors'
import { createClient, ErrorReply } from 'redis'
import { answerWithin } from '../../core/answer-within'

export interface RedisClientOptions {
  /** How long opening a connection may take. */
  connectTimeoutMs?: number
  log?: (message: string) => void
}

/**
 * A node-redis client that fails fast: commands are refused at once while it is not connected (no
 * offline queue), so a gateway without Redis answers 503 instead of hanging. It starts connecting at
 * once and keeps reconnecting in the background; close it with `client.destroy()` or `close()`.
 * node-redis's own command timeout stops counting once a command is written, so it cannot notice a
 * Redis that stopped answering: it is turned off (it costs a timer per command) and callers bound
 * their calls with `withDeadline`.
 */
export function createRedisClient(url: string, options: RedisClientOptions = {}) {
  const log = options.log ?? ((message: string) => console.error(message))
  const client = createClient({
    url,
    disableOfflineQueue: true,
    commandOptions: { timeout: 0 },
    socket: {
      connectTimeout: options.connectTimeoutMs ?? 1_000,
      reconnectStrategy: reconnectDelayMs,
    },
  })
  // node-redis emits 'error' on every failed attempt (and throws without a listener): say it once per outage.
  let reported = false
  client.on('error', (error: Error) => {
    if (reported) return
    reported = true
    log(`redis: ${error.message}; commands fail with service_unavailable until it is back`)
  })
  client.on('ready', () => {
    if (reported) log('redis: connected again')
    reported = false
  })
  // Rejects only when the client is closed for good; failures before that are retried.
  client.connect().catch(() => {})
  return client
}

export type RedisClient = ReturnType<typeof createRedisClient>

/** Capped exponential backoff with jitter, so many gateways do not reconnect in step. */
export function reconnectDelayMs(retries: number): number {
  return Math.min(50 * 2 ** retries, 2_000) + Math.floor(Math.random() * 50)
}

/** Resolves once the client (of one server or of a cluster) is connected; service_unavailable after `timeoutMs`. */
export async function waitForRedis(client: { readonly isReady: boolean }, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!client.isReady) {
    if (performance.now() > deadline) throw new GatewayError('service_unavailable', `Redis is not reachable within ${timeoutMs} ms.`)
    await Bun.sleep(10)
  }
}

/** `call`, or a rejection once `timeoutMs` passed without an answer. */
export function withDeadline<T>(call: Promise<T>, timeoutMs: number): Promise<T> {
  return answerWithin(call, timeoutMs, 'redis')
}

// Error replies that mean Redis cannot serve now, rather than that the command is wrong.
const unavailableReply = /^(LOADING|BUSY|MASTERDOWN|READONLY|OOM|CLUSTERDOWN|TRYAGAIN|NOREPLICAS|MISCONF)\b/

/**
 * What a store throws for a failed Redis call: service_unavailable (fail closed) when Redis is
 * unreachable, slow or not serving; other error replies (a script fault) unchanged.
 */
export function redisFailure(error: unknown): unknown {
  if (error instanceof GatewayError) return error
  if (error instanceof ErrorReply && !unavailableReply.test(error.message)) return error
  const failure = new GatewayError('service_unavailable')
  failure.cause = error
  return failure
}
