import { GatewayError } from '@nilegate/shared/errors'
import { hashApiKey, looksLikeApiKey } from '../../core/api-keys'
import { authorizeKey, bearerToken, type ApiKeyCache, type KeyScope } from '../../core/authenticate'
import type { EdgeLimiter } from '../../core/edge-limiter'
import type { ApiKeyIdentity } from '../../core/ports'

/**
 * A `derive` function that authenticates the API key of an inference route, applies the edge burst
 * guard, and checks the key's state and scope. It runs before body validation, so 429 (edge), 401
 * and 403 take precedence over 400. Only keys that exist are counted at the edge, so a flood of
 * made-up keys cannot grow its state.
 */
export function apiKeyAuth(keys: ApiKeyCache, edge: EdgeLimiter, scope: KeyScope) {
  return async ({ request }: { request: Request }): Promise<{ identity: ApiKeyIdentity; keyHash: string }> => {
    const token = bearerToken(request.headers.get('authorization'))
    if (!looksLikeApiKey(token)) throw new GatewayError('invalid_api_key_format')
    const keyHash = hashApiKey(token)
    const identity = await keys.lookup(keyHash)
    if (identity) edge.admit(keyHash)
    return { identity: authorizeKey(identity, scope, Date.now()), keyHash }
  }
}
