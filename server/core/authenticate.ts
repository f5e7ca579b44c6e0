import { GatewayError } from '@nilegate/shared/errors'
import type { ApiKeyIdentity } from './ports'

export { ApiKeyCache, type KeyCacheOptions } from './api-key-cache'

/** What a key must be allowed to call. */
export type KeyScope = 'models.read' | 'chat.completions' | 'embeddings'

/** The bearer token of an Authorization header, or a 401 naming what is wrong. */
export function bearerToken(authorization: string | undefined | null): string {
  if (!authorization) throw new GatewayError('missing_auth_header')
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  if (!match) throw new GatewayError('missing_auth_header', 'The Authorization header must be "Bearer <API key>".')
  return match[1]!
}

/** Checks a resolved key against its state and the scope the route needs. */
export function authorizeKey(identity: ApiKeyIdentity | null, scope: KeyScope, nowMs: number): ApiKeyIdentity {
  if (!identity) throw new GatewayError('invalid_api_key')
  if (identity.revokedAt !== null) throw new GatewayError('key_revoked')
  if (identity.expiresAt !== null && identity.expiresAt <= nowMs) {
    throw new GatewayError('key_expired', `This API key expired at ${new Date(identity.expiresAt).toISOString()}.`)
  }
  if (identity.orgStatus === 'suspended') throw new GatewayError('org_suspended')
  if (!identity.scopes.includes(scope)) {
    throw new GatewayError('key_scope_insufficient', `This API key lacks the '${scope}' scope needed for this endpoint.`)
  }
  return identity
}
