import { treaty } from '@elysiajs/eden'
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { hashApiKey } from '../../server/core/api-keys'
import { ApiKeyCache } from '../../server/core/authenticate'
import { Catalog, type CatalogModel, type Deployment } from '../../server/core/catalog'
import type { ApiKeyIdentity, EmbeddingInput, EmbeddingResult, Provider, ProviderCall, UsageEvent } from '../../server/core/ports'
import { demoCatalogPath, loadCatalogFile } from '../../server/catalog-file'
import { InProcessAdmissionStore } from '../../server/adapters/in-process/admission-store'
import type { LedgerCounters } from '../../server/core/admission'
import type { EdgeLimiter } from '../../server/core/edge-limiter'
import type { Router } from '../../server/core/router'
import { buildApp } from '../../server/http/app'
import type { ManagementDeps } from '../../server/http/management'
import { unavailableManagement } from './management-app'

export { demoCatalogPath }
export const chatModel = 'nile/qwen2.5-7b-instruct'
export const embeddingsModel = 'nile/bge-m3'
export const retiredModel = 'nile/llama-2-13b-chat'

/** A valid chat request, with overrides. */
export function chatRequest(overrides: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest {
  return { model: chatModel, messages: [{ role: 'user', content: 'Hello there' }], ...overrides }
}

/** An identity with every scope, with overrides. */
export function keyIdentity(overrides: Partial<ApiKeyIdentity> = {}): ApiKeyIdentity {
  return { keyId: 'key_test', orgId: 'org_test', projectId: 'proj_test', revokedAt: null, expiresAt: null, scopes: ['models.read', 'chat.completions', 'embeddings'], rpmLimit: null, orgStatus: 'active', planTier: 'enterprise', orgRpmCeiling: null, projectRpmOverride: null, keyMonthlyCapMicros: null, projectMonthlyCapMicros: null, billingTimeZone: 'Africa/Cairo', requiresRegion: null, ipAllowList: [], orgAllowedModels: null, projectEnabledModels: null, projectArchivedAt: null, ...overrides }
}

/** A provider whose answers the test scripts; it records the calls it saw. */
export class ScriptedProvider implements Provider {
  calls: Array<{ body: unknown; call: ProviderCall; extra?: Record<string, unknown> }> = []
  chunks: string[] = ['Hel', 'lo']
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null = { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 }
  failBeforeStart: Error | null = null
  failAfterChunks: { count: number; error: Error } | null = null
  /** Resolves each time a chunk is handed out; lets tests wait for progress without sleeping. */
  onChunk: (index: number) => void = () => {}
  /** Awaited before chunk `index` is produced: lets a test hold the stream where it wants it. */
  beforeChunk: (index: number, signal: AbortSignal) => Promise<void> | void = () => {}

  async chat(body: ChatCompletionRequest, call: ProviderCall): Promise<ChatCompletion> {
    this.calls.push({ body, call })
    if (this.failBeforeStart) throw this.failBeforeStart
    return {
      id: 'chatcmpl-test',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'upstream-name',
      choices: [{ index: 0, message: { role: 'assistant', content: this.chunks.join(''), refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: this.usage ?? { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }
  }

  async streamChat(body: ChatCompletionRequest, call: ProviderCall): Promise<AsyncIterable<ChatCompletionChunk>> {
    this.calls.push({ body, call })
    if (this.failBeforeStart) throw this.failBeforeStart
    const self = this
    const base = { id: 'chatcmpl-test', object: 'chat.completion.chunk' as const, created: 1_700_000_000, model: 'upstream-name' }
    return (async function* () {
      yield { ...base, choices: [{ index: 0, delta: { role: 'assistant' as const, content: '' }, logprobs: null, finish_reason: null }], usage: null }
      for (let i = 0; i < self.chunks.length; i++) {
        if (self.failAfterChunks && i === self.failAfterChunks.count) throw self.failAfterChunks.error
        await self.beforeChunk(i, call.signal)
        if (call.signal.aborted) throw call.signal.reason
        self.onChunk(i)
        yield { ...base, choices: [{ index: 0, delta: { content: self.chunks[i] }, logprobs: null, finish_reason: null }], usage: null }
        await new Promise((resolve) => setImmediate(resolve))
      }
      yield { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' as const }], usage: null }
      if (self.usage) yield { ...base, choices: [], usage: self.usage }
    })()
  }

  async embed(input: EmbeddingInput, dimensions: number | null, call: ProviderCall, extra?: Record<string, unknown>): Promise<EmbeddingResult> {
    this.calls.push({ body: input, call, extra })
    if (this.failBeforeStart) throw this.failBeforeStart
    const size = dimensions ?? 4
    return { vectors: input.items.map((_, i) => Float32Array.from({ length: size }, (_, j) => (i + 1) * 0.25 - j * 0.5)), promptTokens: 5 }
  }
}

/**
 * The gateway's app over a scripted provider, an in-memory key store and a usage list. `models`
 * replaces the demo catalog and `providerFor` the scripted provider (e.g. real providers in front of
 * fake upstreams); `router` replaces the catalog's default one.
 */
export async function testApp(
  options: {
    identity?: ApiKeyIdentity
    provider?: ScriptedProvider
    bodyBudgetBytes?: number
    balanceMicros?: bigint
    now?: () => number
    ledgerFails?: boolean
    /** The usage sink says it is full: too many rows wait to be written. */
    usageFull?: boolean
    /** Ledger reads never answer; admissions give up after `ledgerTimeoutMs`. */
    ledgerHangs?: boolean
    ledgerTimeoutMs?: number
    /** How long the ledger takes to answer its `read`th read (from 0). */
    ledgerDelayMs?: (read: number) => number
    /** The management API's deps; stores that fail every call when absent. */
    management?: ManagementDeps
    edge?: EdgeLimiter
    models?: CatalogModel[]
    providerFor?: (deployment: Deployment) => Provider
    router?: Router
  } = {},
) {
  const secret = `sk-test${'x'.repeat(44)}`
  const provider = options.provider ?? new ScriptedProvider()
  const identity = options.identity ?? keyIdentity()
  const usage: UsageEvent[] = []
  const models = options.models ?? (await loadCatalogFile(demoCatalogPath))
  const admission = new InProcessAdmissionStore()
  const ledgerReads: string[] = []
  const ledger = {
    async readCounters(orgId: string, month: string): Promise<LedgerCounters> {
      const delayMs = options.ledgerDelayMs?.(ledgerReads.length) ?? 0
      ledgerReads.push(orgId)
      if (options.ledgerFails) throw new Error('connection refused')
      if (options.ledgerHangs) return new Promise<never>(() => {})
      if (delayMs > 0) await Bun.sleep(delayMs)
      return { month, balanceMicros: options.balanceMicros ?? 1_000_000_000_000n, keySpend: new Map(), projectSpend: new Map(), recordedIds: [] }
    },
  }
  const app = buildApp({
    catalog: new Catalog(models),
    providerFor: options.providerFor ?? (() => provider),
    router: options.router,
    usage: { record: (event) => usage.push(event), full: options.usageFull ?? false },
    admission,
    ledger,
    ledgerTimeoutMs: options.ledgerTimeoutMs,
    now: options.now,
    log: () => {},
    edge: options.edge,
    keys: new ApiKeyCache({ findApiKeyByHash: async (hash) => (hash === hashApiKey(secret) ? identity : null) }),
    bodyBudgetBytes: options.bodyBudgetBytes ?? 256 * 1024 * 1024,
    management: options.management ?? unavailableManagement(),
  })
  const headers = { authorization: `Bearer ${secret}` }
  /** A raw request to the app, authenticated unless headers say otherwise. */
  const send = (method: string, path: string, body?: BodyInit, extraHeaders: Record<string, string> = {}) =>
    app.handle(new Request(`http://localhost${path}`, { method, body, headers: { ...headers, 'content-type': 'application/json', ...extraHeaders } }))
  return { app, api: treaty(app, { headers }), secret, provider, usage, send, admission, ledgerReads }
}
