import { GatewayError } from '@nilegate/shared/errors'
import { hashApiKey, looksLikeApiKey } from '../../core/api-keys'
import { authorizeKey, bearerToken, type ApiKeyCache, type KeyScope } from '../../core/authenticate'
import type { ApiKeyIdentity } from '../../core/ports'

/**
 * A `derive` function that authenticates the API key of an inference route and checks its scope.
 * It runs before body validation, so 401 and 403 take precedence over 400.
 */
export function apiKeyAuth(keys: ApiKeyCache, scope: KeyScope) {
  return async ({ request }: { request: Request }): Promise<{ identity: ApiKeyIdentity }> => {
    const token = bearerToken(request.headers.get('authorization'))
    if (!looksLikeApiKey(token)) throw new GatewayError('invalid_api_key_format')
    const identity = await keys.lookup(hashApiKey(token))
    return { identity: authorizeKey(identity, scope, Date.now()) }
  }
}
