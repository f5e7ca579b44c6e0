/** FNV-1a offset basis: the seed of a fresh hash. */
export const hashSeed = 0x811c9dc5

/** 32-bit FNV-1a over the UTF-16 code units of a text, continuing from `seed`; stable across runs and hosts. */
export function stableHash(text: string, seed: number = hashSeed): number {
  let hash = seed
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return hash >>> 0
}

/** Folds one integer into a running FNV-1a hash. */
export function hashStep(hash: number, value: number): number {
  return Math.imul(hash ^ value, 0x01000193) >>> 0
}

/** Spreads the bits of a hash (murmur3's finaliser), so low bits are usable as bucket and sign. */
export function mixHash(hash: number): number {
  hash ^= hash >>> 16
  hash = Math.imul(hash, 0x85ebca6b)
  hash ^= hash >>> 13
  hash = Math.imul(hash, 0xc2b2ae35)
  hash ^= hash >>> 16
  return hash >>> 0
}

/** A deterministic stream of unsigned 32-bit integers (mulberry32). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let value = Math.imul(state ^ (state >>> 15), state | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return (value ^ (value >>> 14)) >>> 0
  }
}
