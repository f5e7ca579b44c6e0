import { describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { generateApiKey, hashApiKey, looksLikeApiKey, newId, randomBase62 } from '../../../server/core/api-keys'

describe('generateApiKey', () => {
  test('makes an sk- secret of 48 base62 characters, its SHA-256 hex and a display prefix', () => {
    const key = generateApiKey()

    expect(key.secret).toMatch(/^sk-[0-9A-Za-z]{48}$/)
    expect(key.hashHex).toBe(createHash('sha256').update(key.secret).digest('hex'))
    expect(key.displayPrefix).toBe(`sk-${key.secret.slice(3, 7)}...${key.secret.slice(-4)}`)
  })

  test('never repeats a secret', () => {
    const secrets = new Set(Array.from({ length: 1_000 }, () => generateApiKey().secret))

    expect(secrets.size).toBe(1_000)
  })
})

describe('hashApiKey', () => {
  test('is the lower-case SHA-256 hex digest of the secret', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })
})

describe('looksLikeApiKey', () => {
  test('accepts tokens that start with sk- and nothing else', () => {
    expect(['sk-abc', 'sk-', 'sess_abc', 'SK-abc', 'Bearer sk-abc', ''].map(looksLikeApiKey)).toEqual([true, true, false, false, false, false])
  })
})

describe('newId', () => {
  test('joins the prefix and 24 random base62 characters', () => {
    expect(newId('org')).toMatch(/^org_[0-9A-Za-z]{24}$/)
  })
})

describe('randomBase62', () => {
  test('uses every base62 character with roughly equal frequency', () => {
    const counts = new Map<string, number>()

    for (const character of randomBase62(62_000)) counts.set(character, (counts.get(character) ?? 0) + 1)

    expect(counts.size).toBe(62)
    // 1,000 expected per character; 5 standard deviations is about 160.
    expect(Math.min(...counts.values())).toBeGreaterThan(800)
    expect(Math.max(...counts.values())).toBeLessThan(1_200)
  })
})
