import { GatewayError } from '@nilegate/shared/errors'
import { hashApiKey, looksLikeApiKey } from '../../core/api-keys'
import { authorizeKey, bearerToken, type ApiKeyCache, type KeyScope } from '../../core/authenticate'
import { clientIp, type AddressList } from '../../core/client-ip'
import type { EdgeLimiter } from '../../core/edge-limiter'
import { looksLikeSessionToken } from '../../core/governance/accounts'
import type { KeyUseDenialRecorder } from '../../core/key-use-denials'
import type { ApiKeyIdentity } from '../../core/ports'

/** What the API-key routes authenticate with. */
export interface KeyAuthDeps {
  keys: ApiKeyCache
  edge: EdgeLimiter
  /** Peers whose X-Forwarded-For is believed when checking IP allow-lists. */
  trustedProxies: AddressList
  /** Audits refusals of known keys for security reasons. */
  denials: KeyUseDenialRecorder
}

/** The parts of an Elysia context the guard reads. */
interface KeyRequestContext {
  request: Request
  server: { requestIP(request: Request): { address: string } | null } | null
  set: { headers: Record<string, unknown> }
}

/**
 * A `derive` function that authenticates the API key of an inference route, applies the edge burst
 * guard, and checks the key's state, IP allow-list and scope. It runs before body validation, so
 * 429 (edge), 401 and 403 take precedence over 400. Only keys that exist are counted at the edge,
 * so a flood of made-up keys cannot grow its state. A warm key costs no database round trip; the
 * client address is only worked out for keys with an allow-list, or for a refusal being audited.
 */
export function apiKeyAuth(deps: KeyAuthDeps, scope: KeyScope) {
  // Destructured in the parameter list, so that Elysia sees which parts of the context are read and
  // skips preparing the rest (cookies, query) on every request.
  return async ({ request, server, set }: KeyRequestContext): Promise<{ identity: ApiKeyIdentity; keyHash: string }> => {
    const token = bearerToken(request.headers.get('authorization'))
    if (!looksLikeApiKey(token)) {
      if (looksLikeSessionToken(token)) throw new GatewayError('invalid_token_type', 'This route takes an API key (sk-...), not a session access token.')
      throw new GatewayError('invalid_api_key_format')
    }
    const keyHash = hashApiKey(token)
    const identity = await deps.keys.lookup(keyHash)
    if (identity) deps.edge.admit(keyHash)
    const ip = () => clientIp(server?.requestIP(request)?.address ?? null, request.headers.get('x-forwarded-for'), deps.trustedProxies)
    try {
      return { identity: authorizeKey(identity, scope, Date.now(), ip), keyHash }
    } catch (error) {
      if (identity && error instanceof GatewayError) deps.denials.record(identity, error.code, ip(), (set.headers['x-request-id'] as string | undefined) ?? null)
      throw error
    }
  }
}
