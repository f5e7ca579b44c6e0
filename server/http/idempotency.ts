import { GatewayError } from '@nilegate/shared/errors'
import type { IdempotencyStore } from '../core/governance/idempotency'

const keyPattern = /^[\x21-\x7e]{1,255}$/

/** JSON with object keys sorted, so the same body sent with its fields in another order matches. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

export interface IdempotentRequest {
  request: Request
  body: unknown
  set: { status?: number | string; headers: Record<string, unknown> }
  /** Whose key space: the user's id. */
  scope: string
}

export interface IdempotentOptions<T> {
  /**
   * What is stored, and so replayed, of the first answer, when that is not all of it: an answer
   * holding a secret shown once (a new API key's `value`) is stored without it, so that the store
   * never holds a usable secret and a replay never shows it a second time.
   */
  storedAs?: (answer: T) => T
}

/**
 * Runs a POST management request at most once per `Idempotency-Key` (DESIGN.md section 9): the same
 * key with the same method, path, organization and project headers and body replays the first
 * successful answer (with `Idempotent-Replayed: true`), as `options.storedAs` kept it; the same key
 * with another request, or while the first is still running, is 409 conflict. Failed requests are
 * forgotten, so a retry runs again. Without the header the request simply runs.
 */
export async function idempotent<T>(store: IdempotencyStore, context: IdempotentRequest, run: () => Promise<T>, options: IdempotentOptions<T> = {}): Promise<T> {
  const key = context.request.headers.get('idempotency-key')
  if (key === null) return run()
  if (!keyPattern.test(key)) throw new GatewayError('invalid_request', 'The Idempotency-Key header must be 1 to 255 printable ASCII characters.', 'Idempotency-Key')
  const { pathname } = new URL(context.request.url)
  // The selected organization and project are part of the request: the same key and body sent for
  // another organization is another request.
  const selection = ['openai-organization', 'openai-project'].map((name) => context.request.headers.get(name)?.trim() ?? '').join('\n')
  const fingerprint = Bun.SHA256.hash(`${context.request.method} ${pathname}\n${selection}\n${canonicalJson(context.body ?? null)}`, 'hex')
  const claim = await store.claim(context.scope, key, fingerprint)
  switch (claim.kind) {
    case 'mismatch':
      throw new GatewayError('conflict', 'This Idempotency-Key was already used with a different request; use a new key for a new request.', 'Idempotency-Key')
    case 'in_progress':
      throw new GatewayError('conflict', 'A request with this Idempotency-Key is still in progress; retry when it has finished.', 'Idempotency-Key')
    case 'replay':
      context.set.status = claim.answer.status
      context.set.headers['idempotent-replayed'] = 'true'
      return claim.answer.body as T
  }
  let result: T
  try {
    result = await run()
  } catch (error) {
    await store.abandon(context.scope, key).catch((abandonError: unknown) => console.error('forgetting an idempotency key failed', abandonError))
    throw error
  }
  const status = typeof context.set.status === 'number' ? context.set.status : 200
  await store.complete(context.scope, key, { status, body: options.storedAs ? options.storedAs(result) : result })
  return result
}
