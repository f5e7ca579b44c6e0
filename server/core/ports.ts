import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import type { CatalogModel, Deployment } from './catalog'

/** What a provider needs to know about the call it serves. */
export interface ProviderCall {
  requestId: string
  /** Aborts when the client goes away or the gateway gives up; providers stop upstream work on it. */
  signal: AbortSignal
  model: CatalogModel
  deployment: Deployment
  /** The W3C `traceparent` to send upstream, when the request came with a trace to continue. */
  traceparent?: string
}

/**
 * Embedding inputs after normalisation: texts (token ids arrive decoded, core/token-ids.ts), and
 * the tokens they count as when an upstream reports none: the ids sent, or the estimate of the text
 * that admission held.
 */
export interface EmbeddingInput {
  items: string[]
  tokens: number
}

/** Vectors and the tokens they cost. */
export interface EmbeddingResult {
  vectors: Float32Array[]
  promptTokens: number
}

/**
 * Turns a validated request into a response. Errors known before the first byte are thrown as
 * GatewayError (so the client gets a real status); `streamChat` resolves once the upstream accepted
 * the request, and its iterable may throw later (sent to the client as an error event).
 */
export interface Provider {
  /** A whole completion; `usage` is filled in (from upstream, or estimated). */
  chat(body: ChatCompletionRequest, call: ProviderCall): Promise<ChatCompletion>
  /**
   * Chunks as the upstream produces them, unbuffered. The last chunk before the end carries `usage`
   * with empty `choices` when the upstream reported it; the gateway estimates usage otherwise. Its
   * iterator may be a `ChatChunkIterator` that hands out what has already arrived.
   */
  streamChat(body: ChatCompletionRequest, call: ProviderCall): Promise<AsyncIterable<ChatCompletionChunk>>
  /** `extra`: the request's other fields (`user`, a provider's own), for an upstream that reads them. */
  embed(input: EmbeddingInput, dimensions: number | null, call: ProviderCall, extra?: Record<string, unknown>): Promise<EmbeddingResult>
}

/** The iterator of a streamed answer's chunks. */
export interface ChatChunkIterator extends AsyncIterator<ChatCompletionChunk> {
  /**
   * The chunks that have arrived after the last one handed out, handed out now (none when none
   * have), in an array the caller may keep and change: those that came together are relayed
   * together.
   */
  ready?(): ChatCompletionChunk[]
  /**
   * Whether the stream is over: its end arrived and every chunk before it was handed out, so
   * `next()` would answer done. The chunks in hand then go out with the end of the stream.
   */
  ended?(): boolean
}

/** A known API key and what it may do; what the hot path needs, cached in process. */
export interface ApiKeyIdentity {
  keyId: string
  orgId: string
  projectId: string
  /** Unix milliseconds, or null. */
  revokedAt: number | null
  expiresAt: number | null
  scopes: string[]
  /** The key's own RPM limit, or null. */
  rpmLimit: number | null
  orgStatus: 'active' | 'suspended'
  planTier: 'free' | 'developer' | 'team' | 'enterprise'
  orgRpmCeiling: number | null
  projectRpmOverride: number | null
  /** Monthly spend caps in micro-EGP, or null when there is none. */
  keyMonthlyCapMicros: bigint | null
  projectMonthlyCapMicros: bigint | null
  /** IANA zone in which the organization's monthly caps reset. */
  billingTimeZone: string
  /** Data residency: only deployments in this region may serve the organization, or null. */
  requiresRegion: string | null
  /** CIDRs and addresses (v4 and v6) the key may be used from; empty allows every address. */
  ipAllowList: string[]
  /** The organization's model allow-list (set by an operator), or null for the whole catalog. */
  orgAllowedModels: string[] | null
  /** The models enabled for the key's project, or null for every model the organization may use. */
  projectEnabledModels: string[] | null
  /** Unix milliseconds at which the key's project was archived, or null; its keys then stop working. */
  projectArchivedAt: number | null
}

/** Looks API keys up by the SHA-256 hex digest of the secret. */
export interface IdentityStore {
  findApiKeyByHash(hashHex: string): Promise<ApiKeyIdentity | null>
}

/** One request as it is recorded for usage and billing. */
export interface UsageEvent {
  requestId: string
  keyId: string
  orgId: string
  projectId: string
  model: string
  endpoint: 'chat.completions' | 'embeddings'
  stream: boolean
  /** Tokens billed: as reported (or estimated), within the request's hold. */
  promptTokens: number
  completionTokens: number
  /** What the request was billed: never more than its hold. */
  costMicros: bigint
  /** Usage reported beyond the hold, recorded for operators and never charged; absent when none. */
  unbilled?: UnbilledUsage
  /** HTTP status of the request, 499 when the client went away mid-stream. */
  status: number
  latencyMs: number
  region: string | null
  createdAt: Date
}

/** Tokens and cost an upstream reported beyond a request's hold. */
export interface UnbilledUsage {
  promptTokens: number
  completionTokens: number
  micros: bigint
}

/** The ledger as admission needs it: balance (credits minus debits) and one month's spend per key and project. */
export interface LedgerReader {
  /**
   * The counters admission starts from, and which of `requestIds` (default none) have usage rows,
   * read in one snapshot.
   */
  readCounters(orgId: string, month: string, timeZone: string, requestIds?: readonly string[]): Promise<import('./admission').LedgerCounters>
}

/** The usage rows a ledger snapshot did not hold, for the follow-up of a rebuild (late-usage.ts). */
export interface LateUsageReader {
  /**
   * The organization's usage rows created from `sinceMs` to before `untilMs` that `snapshot`
   * (`LedgerCounters.snapshot`) did not hold, their month taken in `timeZone`.
   */
  readUsageAfter(orgId: string, snapshot: string, sinceMs: number, untilMs: number, timeZone: string): Promise<import('./admission').LateUsage[]>
}

/** The usage rows of settled requests, for the reconciler (reconcile.ts). */
export interface UsageRowFinder {
  /**
   * The usage rows of the organization's `requestIds` (the reconciler's watched settlements):
   * those `snapshot` did not hold, their month taken in `timeZone`, and the ids without a row yet.
   */
  findUsageRows(orgId: string, snapshot: string, requestIds: readonly string[], timeZone: string): Promise<UsageRowsFound>
}

/** What `UsageRowFinder.findUsageRows` found. */
export interface UsageRowsFound {
  /** Rows written after the snapshot. */
  after: import('./admission').LateUsage[]
  /** Ids with no row yet. */
  missingIds: string[]
}

/** Writes usage events in batches; the hot path only queues. */
export interface UsageRepository {
  insertUsageEvents(events: UsageEvent[]): Promise<void>
}

/** Takes usage events from the hot path without waiting on I/O. */
export interface UsageSink {
  record(event: UsageEvent): void
  /** Writes what is queued (a sink that writes at once has nothing to do); rejects when it cannot. */
  flush?(): Promise<void>
  /**
   * True while so many events wait to be written that new requests are refused (503): memory stays
   * bounded while the database is away, and no request is served whose row could then be lost.
   */
  readonly full?: boolean
}
