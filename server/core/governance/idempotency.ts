/** The first answer of a request made with an Idempotency-Key. */
export interface StoredAnswer {
  status: number
  body: unknown
}

export type IdempotencyClaim =
  /** First use of the key: run the request, then `complete` (or `abandon` on a server fault). */
  | { kind: 'claimed' }
  /** Same key, same request, finished: replay this answer. */
  | { kind: 'replay'; answer: StoredAnswer }
  /** Same key and request, still running elsewhere. */
  | { kind: 'in_progress' }
  /** Same key, another request. */
  | { kind: 'mismatch' }

export interface IdempotencyStore {
  claim(scope: string, key: string, fingerprint: string): Promise<IdempotencyClaim>
  complete(scope: string, key: string, answer: StoredAnswer): Promise<void>
  /** Forgets a claim whose request failed with a server fault, so a retry may run it again. */
  abandon(scope: string, key: string): Promise<void>
}
