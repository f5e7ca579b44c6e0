import type { ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { defaultRoutingSettings, type CatalogModel, type Deployment } from '../../server/core/catalog'
import type { ProviderCall } from '../../server/core/ports'

const encoder = new TextEncoder()

/** A request the fake upstream received. */
export interface ReceivedRequest {
  method: string
  path: string
  headers: Headers
  /** The parsed JSON body, or null when there was none. */
  body: any
  /** The port of the client's socket: equal ports mean a reused connection. */
  clientPort: number | undefined
  /** Resolves when the client aborted the request or closed the connection. */
  aborted: Promise<void>
}

/** How a test scripts the fake upstream's answer to each request. */
export type UpstreamHandler = (request: ReceivedRequest) => Response | Promise<Response>

/** An OpenAI-compatible upstream on a free local port, answering as the test says. */
export interface FakeUpstream {
  /** What a deployment's base_url would be: http://127.0.0.1:<port>/v1. */
  baseUrl: string
  requests: ReceivedRequest[]
  /** Resolves with the next request to arrive (or the first one, if it already arrived and was not taken). */
  nextRequest(): Promise<ReceivedRequest>
  stop(): void
}

/** Starts a fake upstream; stop it after the test. */
export function startFakeUpstream(handler: UpstreamHandler): FakeUpstream {
  const requests: ReceivedRequest[] = []
  const waiting: Array<(request: ReceivedRequest) => void> = []
  let taken = 0
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeout: 30,
    async fetch(request, server) {
      const clientPort = server.requestIP(request)?.port
      const text = await request.text()
      const aborted = new Promise<void>((resolve) => {
        if (request.signal.aborted) resolve()
        else request.signal.addEventListener('abort', () => resolve(), { once: true })
      })
      const received: ReceivedRequest = {
        method: request.method,
        path: new URL(request.url).pathname,
        headers: request.headers,
        body: text === '' ? null : JSON.parse(text),
        clientPort,
        aborted,
      }
      requests.push(received)
      const waiter = waiting.shift()
      if (waiter) {
        taken++
        waiter(received)
      }
      return handler(received)
    },
  })
  return {
    baseUrl: `http://127.0.0.1:${server.port}/v1`,
    requests,
    nextRequest() {
      if (taken < requests.length) return Promise.resolve(requests[taken++]!)
      return new Promise((resolve) => waiting.push(resolve))
    },
    stop() {
      server.stop(true)
    },
  }
}

/** A response body the test writes piece by piece, whenever it chooses; it opens with an SSE comment. */
export class ControlledStream {
  private controller!: ReadableStreamDefaultController<Uint8Array>
  private markCancelled!: () => void
  /** Resolves when the reader went away (the client aborted or the connection closed). */
  readonly cancelled = new Promise<void>((resolve) => {
    this.markCancelled = resolve
  })
  private readonly body = new ReadableStream<Uint8Array>({
    start: (controller) => {
      this.controller = controller
      // Bun sends the headers with the first bytes of the body: a comment gets them out now.
      controller.enqueue(encoder.encode(': connected\n\n'))
    },
    cancel: () => this.markCancelled(),
  })

  send(data: string | Uint8Array): void {
    this.controller.enqueue(typeof data === 'string' ? encoder.encode(data) : data)
  }

  close(): void {
    this.controller.close()
  }

  /** A 200 text/event-stream response with this body. */
  response(): Response {
    return new Response(this.body, { headers: { 'content-type': 'text/event-stream' } })
  }
}

/** One SSE event carrying `data` as JSON (or verbatim when it is a string). */
export function sseFrame(data: unknown): string {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`
}

export const doneFrame = 'data: [DONE]\n\n'

/** A chat.completion.chunk as an upstream would send it. */
export function upstreamChunk(options: { content?: string; role?: boolean; finish?: string | null; index?: number; model?: string } = {}) {
  const delta: Record<string, unknown> = {}
  if (options.role) delta.role = 'assistant'
  if (options.content !== undefined) delta.content = options.content
  return {
    id: 'chatcmpl-upstream',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: options.model ?? 'upstream-model',
    choices: [{ index: options.index ?? 0, delta, logprobs: null, finish_reason: options.finish ?? null }],
  }
}

/** A usage chunk with empty choices. */
export function upstreamUsageChunk(promptTokens: number, completionTokens: number) {
  return {
    id: 'chatcmpl-upstream',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'upstream-model',
    choices: [],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  }
}

/** A whole well-formed stream: role, the pieces, finish, usage, [DONE]. */
export function upstreamStreamText(pieces: string[]): string {
  return [
    sseFrame(upstreamChunk({ role: true, content: '' })),
    ...pieces.map((content) => sseFrame(upstreamChunk({ content }))),
    sseFrame(upstreamChunk({ finish: 'stop' })),
    sseFrame(upstreamUsageChunk(9, pieces.length)),
    doneFrame,
  ].join('')
}

/** A chat.completion as an upstream would send it. */
export function upstreamCompletion(content: string, usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 }) {
  return {
    id: 'chatcmpl-upstream',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    ...(usage ? { usage } : {}),
  }
}

/** A JSON response. */
export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
}

/** The catalog id the fake upstream's model is served under. */
export const catalogModelId = 'nile/upstream-chat'

/** A provider call for a model deployed on `baseUrl`, with overrides. */
export function upstreamCall(
  baseUrl: string,
  options: { timeouts?: Partial<Deployment['timeouts']>; apiKeyEnv?: string; developerRole?: Deployment['developerRole']; signal?: AbortSignal; requestId?: string; modality?: CatalogModel['modality'] } = {},
): ProviderCall {
  const deployment: Deployment = {
    id: 'upstream#0',
    provider: 'openai-compatible',
    baseUrl,
    upstreamModel: 'upstream-model',
    region: 'EG',
    weight: 1,
    maxConcurrent: null,
    apiKeyEnv: options.apiKeyEnv ?? null,
    developerRole: options.developerRole ?? 'developer',
    timeouts: { connectMs: 5_000, firstTokenMs: 5_000, idleMs: 5_000, totalMs: 10_000, ...options.timeouts },
    circuit: defaultRoutingSettings.circuit,
    simulator: { ttftMs: 0, interTokenMs: 0 },
  }
  const model: CatalogModel = {
    id: catalogModelId,
    ownedBy: 'test',
    created: 1_700_000_000,
    status: 'live',
    modality: options.modality ?? 'chat',
    contextWindow: 8192,
    maxOutputTokens: 1024,
    region: 'EG',
    weights: 'Open weights',
    published: '2024-01-01',
    inputPriceMicrosPerM: 1_000_000n,
    outputPriceMicrosPerM: 2_000_000n,
    pricesAreSamples: true,
    embeddingDimensions: options.modality === 'embeddings' ? 4 : null,
    supportsDimensions: true,
    retiresOn: null,
    replacement: null,
    deployments: [deployment],
  }
  return { requestId: options.requestId ?? 'req_upstream_test', signal: options.signal ?? new AbortController().signal, model, deployment }
}

/** A chat request for the upstream model, with overrides. */
export function upstreamChatRequest(overrides: Partial<ChatCompletionRequest> & Record<string, unknown> = {}): ChatCompletionRequest {
  return { model: catalogModelId, messages: [{ role: 'user', content: 'Hello upstream' }], ...overrides }
}
