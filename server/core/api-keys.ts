const base62Alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
// The largest multiple of 62 below 256: bytes at or above it are redrawn so every character is equally likely.
const unbiasedByteLimit = 248
const apiKeyPrefix = 'sk-'
const secretLength = 48
const idLength = 24

/** A freshly generated API key: the secret is shown once, only the hash and display prefix are stored. */
export interface GeneratedApiKey {
  secret: string
  hashHex: string
  displayPrefix: string
}

/** `length` cryptographically random base62 characters. */
export function randomBase62(length: number): string {
  let result = ''
  while (result.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < unbiasedByteLimit) result += base62Alphabet[byte % 62]
      if (result.length === length) break
    }
  }
  return result
}

/** A new API key: `sk-` followed by 48 random base62 characters. */
export function generateApiKey(): GeneratedApiKey {
  const random = randomBase62(secretLength)
  const secret = apiKeyPrefix + random
  return { secret, hashHex: hashApiKey(secret), displayPrefix: `${apiKeyPrefix}${random.slice(0, 4)}...${random.slice(-4)}` }
}

/** SHA-256 hex digest of a secret: how keys are stored and looked up. Runs on every request. */
export function hashApiKey(secret: string): string {
  return Bun.SHA256.hash(secret, 'hex')
}

/** Whether a bearer token has the shape of an API key (as opposed to a session token). */
export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(apiKeyPrefix)
}

/** A new record id such as `org_3hK9...`: the prefix names the kind of record. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(idLength)}`
}
