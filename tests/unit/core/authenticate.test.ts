import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { ApiKeyCache, authorizeKey, bearerToken } from '../../../server/core/authenticate'
import type { ApiKeyIdentity } from '../../../server/core/ports'
import { keyIdentity } from '../../support/test-app'

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return (error as GatewayError).code
  }
  return undefined
}

class CountingStore {
  lookups = 0
  identity: ApiKeyIdentity | null = keyIdentity()
  async findApiKeyByHash(): Promise<ApiKeyIdentity | null> {
    this.lookups++
    return this.identity
  }
}

describe('ApiKeyCache', () => {
  test('serves a warm key from memory without another lookup', async () => {
    const store = new CountingStore()
    const cache = new ApiKeyCache(store, { now: () => 0 })

    await cache.lookup('h')
    const second = cache.lookup('h')

    expect(second).toEqual(keyIdentity())
    expect(store.lookups).toBe(1)
  })

  test('coalesces concurrent lookups of one key', async () => {
    const store = new CountingStore()
    const cache = new ApiKeyCache(store)

    await Promise.all([cache.lookup('h'), cache.lookup('h'), cache.lookup('h')])

    expect(store.lookups).toBe(1)
  })

  test('refreshes a stale entry in the background and then serves the new state', async () => {
    let now = 0
    const store = new CountingStore()
    const cache = new ApiKeyCache(store, { refreshAfterMs: 1_000, now: () => now })
    await cache.lookup('h')
    store.identity = keyIdentity({ revokedAt: 5 })
    now = 1_500

    const stale = cache.lookup('h')
    await Bun.sleep(0)
    const fresh = cache.lookup('h')

    expect((stale as ApiKeyIdentity).revokedAt).toBeNull()
    expect((fresh as ApiKeyIdentity).revokedAt).toBe(5)
    expect(store.lookups).toBe(2)
  })

  test('remembers unknown keys briefly, then asks again', async () => {
    let now = 0
    const store = new CountingStore()
    store.identity = null
    const cache = new ApiKeyCache(store, { negativeTtlMs: 1_000, now: () => now })

    await cache.lookup('h')
    cache.lookup('h')
    now = 1_000
    await cache.lookup('h')

    expect(store.lookups).toBe(2)
  })
})

describe('ApiKeyCache when the store fails', () => {
  test('a cold key answers 503 service_unavailable, while a warm key is still served', async () => {
    let failing = false
    const store = {
      async findApiKeyByHash(hash: string) {
        if (failing) throw new Error('connection refused')
        return keyIdentity({ keyId: hash })
      },
    }
    const cache = new ApiKeyCache(store, { now: () => 0, log: () => {} })
    await cache.lookup('warm')
    failing = true

    const warm = await cache.lookup('warm')
    const cold = await Promise.resolve(cache.lookup('cold')).catch((error: GatewayError) => error)

    expect(warm?.keyId).toBe('warm')
    expect((cold as GatewayError).code).toBe('service_unavailable')
  })
})

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
