import { describe, expect, test } from 'bun:test'
import type { GatewayError } from '@nilegate/shared/errors'
import { ApiKeyCache } from '../../../server/core/api-key-cache'
import { LocalChangeBus } from '../../../server/core/governance/changes'
import type { ApiKeyIdentity } from '../../../server/core/ports'
import { keyIdentity } from '../../support/test-app'

class CountingStore {
  lookups = 0
  identity: ApiKeyIdentity | null = keyIdentity()
  async findApiKeyByHash(): Promise<ApiKeyIdentity | null> {
    this.lookups++
    return this.identity
  }
}

/** A store whose keys belong to organizations by hash, and whose answers the test releases one by one. */
class HeldStore {
  readonly identities = new Map<string, ApiKeyIdentity>()
  readonly lookups: string[] = []
  private readonly held: Array<{ answer(identity: ApiKeyIdentity | null): void; identity: ApiKeyIdentity | null }> = []
  hold = false

  findApiKeyByHash(hashHex: string): Promise<ApiKeyIdentity | null> {
    this.lookups.push(hashHex)
    // What the database holds when the read runs, even if the answer arrives later.
    const identity = this.identities.get(hashHex) ?? null
    if (!this.hold) return Promise.resolve(identity)
    return new Promise((answer) => this.held.push({ answer, identity }))
  }

  /** Answers the oldest held read with what the database held when it ran. */
  releaseOne(): void {
    const read = this.held.shift()
    if (!read) throw new Error('no read is held')
    read.answer(read.identity)
  }

  get heldReads(): number {
    return this.held.length
  }
}

/** Lets a held store's read, and the cache's reaction to it, run. */
const settle = () => Bun.sleep(0)

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

describe('ApiKeyCache.invalidateOrganization', () => {
  function twoOrganizations() {
    const store = new HeldStore()
    store.identities.set('a1', keyIdentity({ keyId: 'a1', orgId: 'org_a' }))
    store.identities.set('a2', keyIdentity({ keyId: 'a2', orgId: 'org_a' }))
    store.identities.set('b1', keyIdentity({ keyId: 'b1', orgId: 'org_b' }))
    return { store, cache: new ApiKeyCache(store, { now: () => 0 }) }
  }

  test("drops every key of the organization and keeps other organizations' keys warm", async () => {
    const { store, cache } = twoOrganizations()
    await Promise.all(['a1', 'a2', 'b1'].map((hash) => cache.lookup(hash)))
    store.identities.set('a1', keyIdentity({ keyId: 'a1', orgId: 'org_a', revokedAt: 7 }))

    cache.invalidateOrganization('org_a')
    const revoked = await cache.lookup('a1')
    await cache.lookup('a2')
    cache.lookup('b1')

    expect(revoked?.revokedAt).toBe(7)
    expect(store.lookups).toEqual(['a1', 'a2', 'b1', 'a1', 'a2'])
  })

  test('a read that started before the invalidation is read again, and the fresh answer is cached', async () => {
    const { store, cache } = twoOrganizations()
    store.hold = true
    const waiting = cache.lookup('a1')
    await settle()
    store.identities.set('a1', keyIdentity({ keyId: 'a1', orgId: 'org_a', revokedAt: 7 }))

    cache.invalidateOrganization('org_a')
    store.releaseOne()
    await settle()
    store.releaseOne()
    const answered = await waiting
    const cached = cache.lookup('a1')

    expect(answered?.revokedAt).toBe(7)
    expect((cached as ApiKeyIdentity).revokedAt).toBe(7)
    expect(store.lookups).toEqual(['a1', 'a1'])
  })

  test('a background refresh overtaken by an invalidation does not bring the old state back', async () => {
    let now = 0
    const store = new HeldStore()
    store.identities.set('a1', keyIdentity({ keyId: 'a1', orgId: 'org_a' }))
    const cache = new ApiKeyCache(store, { refreshAfterMs: 1_000, now: () => now })
    await cache.lookup('a1')
    store.hold = true
    now = 1_500
    cache.lookup('a1')
    await settle()
    store.identities.set('a1', keyIdentity({ keyId: 'a1', orgId: 'org_a', revokedAt: 7 }))

    cache.invalidateOrganization('org_a')
    store.releaseOne()
    await settle()
    const whileRereading = cache.lookup('a1')
    store.releaseOne()

    expect((await whileRereading)?.revokedAt).toBe(7)
    expect((cache.lookup('a1') as ApiKeyIdentity).revokedAt).toBe(7)
    expect(store.lookups).toEqual(['a1', 'a1', 'a1'])
  })

  test('a read overtaken twice answers its caller but is not cached', async () => {
    const { store, cache } = twoOrganizations()
    store.hold = true
    const waiting = cache.lookup('a1')
    await settle()

    cache.invalidateOrganization('org_a')
    store.releaseOne()
    await settle()
    cache.invalidateOrganization('org_a')
    store.releaseOne()
    await waiting
    store.hold = false
    await cache.lookup('a1')

    expect(store.lookups).toEqual(['a1', 'a1', 'a1'])
  })

  test("a read is cached when only another organization's keys were invalidated meanwhile", async () => {
    const { store, cache } = twoOrganizations()
    store.hold = true
    const waiting = cache.lookup('a1')
    await settle()

    cache.invalidateOrganization('org_b')
    store.releaseOne()
    await waiting
    cache.lookup('a1')

    expect(store.lookups).toEqual(['a1'])
    expect(store.heldReads).toBe(0)
  })

  test('follows a change bus: an organization change drops its keys, other changes and unsubscribed buses do not', async () => {
    const { store, cache } = twoOrganizations()
    const changes = new LocalChangeBus()
    const unsubscribe = cache.subscribeTo(changes)
    await Promise.all(['a1', 'b1'].map((hash) => cache.lookup(hash)))

    await changes.publish({ kind: 'model_retirements' })
    await changes.publish({ kind: 'organization', orgId: 'org_b' })
    cache.lookup('a1')
    await cache.lookup('b1')
    unsubscribe()
    await changes.publish({ kind: 'organization', orgId: 'org_a' })
    cache.lookup('a1')

    expect(store.lookups).toEqual(['a1', 'b1', 'b1'])
  })
})

/** A bus whose coverage the test sets: a number while it delivers every change, null while it may miss some. */
class SettableBus extends LocalChangeBus {
  override coverage: number | null = 1
}

describe('ApiKeyCache on a bus that delivers every change', () => {
  function cacheOn(bus: LocalChangeBus) {
    let now = 0
    const store = new CountingStore()
    const cache = new ApiKeyCache(store, { refreshAfterMs: 1_000, coveredRefreshAfterMs: 60_000, now: () => now })
    cache.subscribeTo(bus)
    return { store, cache, at: (ms: number) => (now = ms) }
  }

  test("the embedded database's bus keeps entries for the long refresh, not the short one", async () => {
    const { store, cache, at } = cacheOn(new LocalChangeBus({ soleWriter: true }))
    await cache.lookup('h')

    at(30_000)
    cache.lookup('h')
    const afterShort = store.lookups
    at(60_000)
    cache.lookup('h')
    await settle()

    expect(afterShort).toBe(1)
    expect(store.lookups).toBe(2)
  })

  test('a bus that other writers bypass keeps the short refresh', async () => {
    const { store, cache, at } = cacheOn(new LocalChangeBus())
    await cache.lookup('h')

    at(1_500)
    cache.lookup('h')
    await settle()

    expect(store.lookups).toBe(2)
  })

  test('entries read before a gap in delivery, or during one, are refreshed after the short time', async () => {
    const bus = new SettableBus()
    const { store, cache, at } = cacheOn(bus)
    await cache.lookup('before-gap')
    bus.coverage = null
    await cache.lookup('during-gap')
    bus.coverage = 2
    await cache.lookup('after-gap')

    at(1_500)
    for (const hash of ['before-gap', 'during-gap', 'after-gap']) cache.lookup(hash)
    await settle()

    expect(store.lookups).toBe(3 + 2)
  })

  test('after unsubscribing, entries fall back to the short refresh', async () => {
    const { store, cache, at } = cacheOn(new LocalChangeBus({ soleWriter: true }))
    await cache.lookup('h')
    const unsubscribe = cache.subscribeTo(new LocalChangeBus({ soleWriter: true }))
    unsubscribe()

    at(1_500)
    cache.lookup('h')
    await settle()

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

describe('ApiKeyCache when the store does not answer', () => {
  /** A store whose reads wait until the test answers them, all at once. */
  class SilentStore {
    lookups = 0
    private readonly waiting: Array<() => void> = []
    findApiKeyByHash(hash: string): Promise<ApiKeyIdentity | null> {
      this.lookups++
      return new Promise((answer) => this.waiting.push(() => answer(keyIdentity({ keyId: hash }))))
    }
    answerAll(): void {
      for (const answer of this.waiting.splice(0)) answer()
    }
  }

  test('a cold key is refused with 503 once the lookup timeout passes, and its read goes on', async () => {
    const store = new SilentStore()
    const logged: string[] = []
    const cache = new ApiKeyCache(store, { lookupTimeoutMs: 20, now: () => 0, log: (message) => logged.push(message) })

    const first = await Promise.resolve(cache.lookup('cold')).catch((error: GatewayError) => error)
    const joined = await Promise.resolve(cache.lookup('cold')).catch((error: GatewayError) => error)

    expect((first as GatewayError).code).toBe('service_unavailable')
    expect((joined as GatewayError).code).toBe('service_unavailable')
    expect(store.lookups).toBe(1)
    expect(logged).toEqual(['looking up an API key got no answer within 20 ms', 'looking up an API key got no answer within 20 ms'])

    store.answerAll()
    await settle()
    expect(await cache.lookup('cold')).toMatchObject({ keyId: 'cold' })
    expect(store.lookups).toBe(1)
  })

  test('a read older than the lookup timeout is not joined: the next caller starts another', async () => {
    const store = new SilentStore()
    let nowMs = 0
    const cache = new ApiKeyCache(store, { lookupTimeoutMs: 20, now: () => nowMs, log: () => {} })

    await Promise.resolve(cache.lookup('cold')).catch(() => {})
    nowMs += 20
    const second = Promise.resolve(cache.lookup('cold'))

    expect(store.lookups).toBe(2)
    store.answerAll()
    expect(await second).toMatchObject({ keyId: 'cold' })
  })

  test('a warm key is served while its refresh waits on the store, with one refresh at a time', async () => {
    const store = new SilentStore()
    let nowMs = 0
    const cache = new ApiKeyCache(store, { lookupTimeoutMs: 20, now: () => nowMs, log: () => {} })
    const warming = cache.lookup('warm')
    store.answerAll()
    await warming

    nowMs += 1_000
    const served = [cache.lookup('warm'), cache.lookup('warm'), cache.lookup('warm')]

    expect(served.map((identity) => (identity as ApiKeyIdentity).keyId)).toEqual(['warm', 'warm', 'warm'])
    expect(store.lookups).toBe(2)
  })
})
