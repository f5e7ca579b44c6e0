import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { authorizeKey, bearerToken } from '../../../server/core/authenticate'
import { keyIdentity } from '../../support/test-app'

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return (error as GatewayError).code
  }
  return undefined
}

describe('authorizeKey', () => {
  test.each([
    [null, 'invalid_api_key'],
    [keyIdentity({ revokedAt: 1 }), 'key_revoked'],
    [keyIdentity({ expiresAt: 1_000 }), 'key_expired'],
    [keyIdentity({ orgStatus: 'suspended' }), 'org_suspended'],
    [keyIdentity({ scopes: ['models.read'] }), 'key_scope_insufficient'],
  ])('%j is refused with %s', (identity, code) => {
    expect(codeOf(() => authorizeKey(identity, 'chat.completions', 1_000))).toBe(code)
  })

  test('a key that expires later is accepted', () => {
    expect(authorizeKey(keyIdentity({ expiresAt: 1_001 }), 'chat.completions', 1_000).keyId).toBe('key_test')
  })
})

describe('bearerToken', () => {
  test.each([
    [undefined, 'missing_auth_header'],
    ['', 'missing_auth_header'],
    ['Token sk-abc', 'missing_auth_header'],
    ['Bearer', 'missing_auth_header'],
  ])('%p is refused with %s', (header, code) => {
    expect(codeOf(() => bearerToken(header))).toBe(code)
  })

  test('takes the token of a Bearer header, whatever the case of the scheme', () => {
    expect(bearerToken('bearer sk-abc')).toBe('sk-abc')
  })
})
