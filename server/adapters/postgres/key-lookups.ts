import type { ApiKeyIdentity } from '../../core/ports'

/** The most hashes one statement looks up; more in one turn go in several. */
export const maxKeysPerLookup = 100

/**
 * One key lookup a call, from a lookup of many: the hashes asked for in one turn of the event loop
 * go to the database together, at its end. A cold cache (after a start, or over many keys) asks
 * for hundreds of keys a second, and each statement costs the database far more than each key in it:
 * on the embedded database through its thread, a statement of one key took about 0.5 ms.
 * A failed statement fails the lookups it held.
 */
export function batchKeyLookups(findMany: (hashesHex: string[]) => Promise<(ApiKeyIdentity | null)[]>): (hashHex: string) => Promise<ApiKeyIdentity | null> {
  let waiting: Array<{ hashHex: string; resolve: (identity: ApiKeyIdentity | null) => void; reject: (error: unknown) => void }> = []

  const lookUp = async (part: typeof waiting) => {
    try {
      const identities = await findMany(part.map((lookup) => lookup.hashHex))
      part.forEach((lookup, index) => lookup.resolve(identities[index] ?? null))
    } catch (error) {
      for (const lookup of part) lookup.reject(error)
    }
  }
  const lookUpWaiting = () => {
    const lookups = waiting
    waiting = []
    for (let start = 0; start < lookups.length; start += maxKeysPerLookup) void lookUp(lookups.slice(start, start + maxKeysPerLookup))
  }

  return (hashHex) =>
    new Promise((resolve, reject) => {
      if (waiting.length === 0) setImmediate(lookUpWaiting)
      waiting.push({ hashHex, resolve, reject })
    })
}
