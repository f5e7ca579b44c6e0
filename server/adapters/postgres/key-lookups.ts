import { TurnBatches } from '../../core/turn-batches'
import type { ApiKeyIdentity } from '../../core/ports'

/** The most hashes one statement looks up; more in one turn go in several. */
export const maxKeysPerLookup = 100

/**
 * One key lookup a call, from a lookup of many: the hashes asked for in one turn of the event loop
 * go to the database together, at its end (`TurnBatches`). A cold cache (after a start, or over
 * many keys) asks for hundreds of keys a second, and each statement costs the database far more
 * than each key in it: on the embedded database through its thread, a statement of one key took
 * about 0.5 ms. A failed statement fails the lookups it held.
 */
export function batchKeyLookups(findMany: (hashesHex: string[]) => Promise<(ApiKeyIdentity | null)[]>): (hashHex: string) => Promise<ApiKeyIdentity | null> {
  const lookups = new TurnBatches(maxKeysPerLookup, findMany)
  return (hashHex) => lookups.add('', hashHex)
}
