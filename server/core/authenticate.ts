import { GatewayError } from '@nilegate/shared/errors'
import { AddressList, parseCidr } from './client-ip'
import type { ApiKeyIdentity } from './ports'

export { ApiKeyCache, type KeyCacheOptions } from './api-key-cache'

/** What an API key may be allowed to call; a key holds a non-empty subset. */
export const keyScopes = ['models.read', 'chat.completions', 'embeddings'] as const
export type KeyScope = (typeof keyScopes)[number]

/** The bearer token of an Authorization header, or a 401 naming what is wrong. */
export function bearerToken(authorization: string | undefined | null): string {
  if (!authorization) throw new GatewayError('missing_auth_header')
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  if (!match) throw new GatewayError('missing_auth_header', 'The Authorization header must be "Bearer <API key>".')
  return match[1]!
}

// Identities cross a thread boundary as plain data, so the parsed allow-list cannot travel with
// them; it is parsed on the first check of each loaded identity and lives as long as the cache
// keeps that object.
const allowLists = new WeakMap<ApiKeyIdentity, AddressList>()

function allowListOf(identity: ApiKeyIdentity): AddressList {
  let list = allowLists.get(identity)
  if (!list) {
    // Entries were validated when written; one that no longer parses simply matches nothing.
    list = new AddressList(identity.ipAllowList.filter((entry) => parseCidr(entry) !== null))
    allowLists.set(identity, list)
  }
  return list
}

/**
 * Checks a resolved key against its state, its project, its organization, its IP allow-list and
 * the scope the route needs, in the order of DESIGN.md section 2 (401 before 403). `clientIp` is
 * only asked for when the key has an allow-list; an unknown address never passes one.
 */
export function authorizeKey(identity: ApiKeyIdentity | null, scope: KeyScope, nowMs: number, clientIp: () => string | null = () => null): ApiKeyIdentity {
  if (!identity) throw new GatewayError('invalid_api_key')
  if (identity.revokedAt !== null) throw new GatewayError('key_revoked')
  if (identity.projectArchivedAt !== null) {
    throw new GatewayError('key_revoked', `This API key's project '${identity.projectId}' was archived on ${new Date(identity.projectArchivedAt).toISOString()}; the keys of an archived project no longer work.`)
  }
  if (identity.expiresAt !== null && identity.expiresAt <= nowMs) {
    throw new GatewayError('key_expired', `This API key expired at ${new Date(identity.expiresAt).toISOString()}.`)
  }
  if (identity.orgStatus === 'suspended') throw new GatewayError('org_suspended')
  if (identity.ipAllowList.length > 0) {
    const ip = clientIp()
    if (ip === null || !allowListOf(identity).contains(ip)) {
      throw new GatewayError('ip_not_allowed', `The request IP ${ip ?? '(unknown)'} is not on this API key's IP allow-list.`)
    }
  }
  if (!identity.scopes.includes(scope)) {
    throw new GatewayError('key_scope_insufficient', `This API key lacks the '${scope}' scope needed for this endpoint.`)
  }
  return identity
}
