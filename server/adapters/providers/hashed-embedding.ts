/**
 * Embeddings without a model: feature-hashed character 3-grams and whole words, signed into a fixed
 * number of buckets and L2-normalised. Texts that share words and fragments get vectors with a high
 * cosine similarity.
 */
import { hashSeed, hashStep, mixHash } from './stable-hash'

const space = 32
const wordWeight = 2
const wordSalt = 0x5bd1e995

/** Whitespace and punctuation (ASCII, general, Arabic) separate words. */
function isSeparator(code: number): boolean {
  return (
    code <= space ||
    (code >= 33 && code <= 47) ||
    (code >= 58 && code <= 64) ||
    (code >= 91 && code <= 96) ||
    (code >= 123 && code <= 127) ||
    code === 0xa0 ||
    code === 0x060c ||
    code === 0x061b ||
    code === 0x061f ||
    code === 0x06d4 ||
    (code >= 0x2000 && code <= 0x206f) ||
    code === 0x3000
  )
}

/** Arabic diacritics and the tatweel do not change a word: skip them. */
function isIgnorable(code: number): boolean {
  return (code >= 0x064b && code <= 0x0652) || code === 0x0640
}

function addFeature(vector: Float32Array, hash: number, weight: number): void {
  const mixed = mixHash(hash)
  vector[mixed % vector.length]! += (mixed & 0x80000000) === 0 ? weight : -weight
}

function normalize(vector: Float32Array): Float32Array {
  let sum = 0
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!
  if (sum === 0) {
    vector[0] = 1
    return vector
  }
  const scale = 1 / Math.sqrt(sum)
  for (let i = 0; i < vector.length; i++) vector[i]! *= scale
  return vector
}

/** A unit vector of `dimensions` for a text: lower-cased, separators collapsed to one space. */
export function embedText(text: string, dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions)
  const lower = text.toLowerCase()
  let first = space
  let second = space
  let word = hashSeed
  let wordLength = 0
  for (let i = 0; i <= lower.length; i++) {
    let code = i === lower.length ? space : lower.charCodeAt(i)
    if (isIgnorable(code)) continue
    if (isSeparator(code)) code = space
    if (code === space && second === space) continue
    addFeature(vector, hashStep(hashStep(hashStep(hashSeed, first), second), code), 1)
    if (code === space) {
      if (wordLength > 0) addFeature(vector, word ^ wordSalt, wordWeight)
      word = hashSeed
      wordLength = 0
    } else {
      word = hashStep(word, code)
      wordLength++
    }
    first = second
    second = code
  }
  return normalize(vector)
}
