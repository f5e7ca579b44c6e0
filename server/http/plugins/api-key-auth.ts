import { GatewayError } from '@nilegate/shared/errors'
import { hashApiKey, looksLikeApiKey } from '../../core/api-keys'
import { addressGroup, type AuthFailureLimiter } from '../../core/auth-failure-limiter'
import { authorizeKey, bearerToken, type ApiKeyCache, type KeyScope } from '../../core/authenticate'
import { clientIp, type AddressList } from '../../core/client-ip'
import type { EdgeLimiter } from '../../core/edge-limiter'
import { looksLikeSessionToken } from '../../core/governance/accounts'
import type { KeyUseDenialRecorder } from '../../core/key-use-denials'
import type { ApiKeyIdentity } from '../../core/ports'
import { readsBodyAfterAuth, unreadBody, type BodyReader } from '../request-body'

/** What the API-key routes authenticate with. */
export interface KeyAuthDeps {
  keys: ApiKeyCache
  edge: EdgeLimiter
  /** Peers whose X-Forwarded-For is believed when checking IP allow-lists. */
  trustedProxies: AddressList
  /** Audits refusals of known keys for security reasons. */
  denials: KeyUseDenialRecorder
  /** Reads the body once the key is let in. */
  bodies: BodyReader
  /** Bounds the lookups of keys that are not in memory, per client address. */
  failures: AuthFailureLimiter
}

/** The parts of an Elysia context the guard reads; it reads the body too, once the key is let in. */
interface KeyRequestContext {
  request: Request
  path: string
  body: unknown
  server: { requestIP(request: Request): { address: string } | null } | null
  set: { headers: Record<string, unknown> }
}

/**
 * A `derive` function that authenticates the API key of an inference route from its headers,
 * applies the edge burst guard, checks the key's state, IP allow-list and scope, and only then
 * reads the body (held against the budget in the key's name): 413 (declared size) comes first,
 * then 429 (edge), 401 and 403, then 400, and a request without a valid key costs no body read.
 * Only keys that exist are counted at the edge, so a flood of made-up keys cannot grow its state;
 * a key not in memory is looked up within its address's allowance of unknown credentials
 * (AuthFailureLimiter). A warm key costs no database round trip; the client address is only worked
 * out for keys with an allow-list, for a lookup, or for a refusal being audited.
 */
export function apiKeyAuth(deps: KeyAuthDeps, scope: KeyScope) {
  // The context is destructured at the top, so that Elysia sees which parts of it are read and
  // skips preparing the rest (cookies, query) on every request.
  return readsBodyAfterAuth(async (context: KeyRequestContext): Promise<{ identity: ApiKeyIdentity; keyHash: string }> => {
    const { request, path, server, set } = context
    const token = bearerToken(request.headers.get('authorization'))
    if (!looksLikeApiKey(token)) {
      if (looksLikeSessionToken(token)) throw new GatewayError('invalid_token_type', 'This route takes an API key (sk-...), not a session access token.')
      throw new GatewayError('invalid_api_key_format')
    }
    const keyHash = hashApiKey(token)
    const ip = () => clientIp(server?.requestIP(request)?.address ?? null, request.headers.get('x-forwarded-for'), deps.trustedProxies)
    let identity = deps.keys.cached(keyHash)
    if (identity === undefined) identity = await lookUpWithinAllowance(deps, keyHash, addressGroup(ip()))
    if (identity) deps.edge.admit(keyHash)
    let authorized: ApiKeyIdentity
    try {
      authorized = authorizeKey(identity, scope, Date.now(), ip)
    } catch (error) {
      if (identity && error instanceof GatewayError) deps.denials.record(identity, error.code, ip(), (set.headers['x-request-id'] as string | undefined) ?? null)
      throw error
    }
    if (context.body === unreadBody) context.body = await deps.bodies.readFor(request, path, set.headers, keyHash)
    return { identity: authorized, keyHash }
  })
}

/**
 * A key not in memory, read from the store if the address may still try unknown keys (else 429).
 * A lookup that joins a read of the same key already under way costs nothing more, so a burst of a
 * new key's first requests takes one place of the allowance, for as long as its read lasts.
 */
async function lookUpWithinAllowance(deps: KeyAuthDeps, keyHash: string, group: string): Promise<ApiKeyIdentity | null> {
  for (;;) {
    if (deps.keys.isBeingRead(keyHash)) return deps.keys.lookup(keyHash)
    // After a wait, the key may be in memory: read by another request of it meanwhile.
    const known = deps.keys.cached(keyHash)
    if (known !== undefined) return known
    const wait = deps.failures.take(group)
    if (wait === undefined) break
    await wait
  }
  let identity: ApiKeyIdentity | null
  try {
    identity = await deps.keys.lookup(keyHash)
  } catch (error) {
    // The store failed (503): no sign the key is made up.
    deps.failures.end(group, true)
    throw error
  }
  deps.failures.end(group, identity !== null)
  return identity
}
