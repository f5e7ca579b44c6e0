import { Elysia } from 'elysia'
import { ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { EmbeddingsRequest } from '@nilegate/shared/schemas/embeddings'
import { completeChat, openChatStream } from '../../core/chat-completions'
import { checkMessages } from '../../core/check-messages'
import { createEmbeddings } from '../../core/embeddings'
import type { InferenceDeps, InferenceRequest } from '../../core/inference'
import type { ApiKeyIdentity } from '../../core/ports'
import type { RequestObserver } from '../../observability/request-record'
import { continueTrace } from '../../observability/trace-context'
import { apiKeyAuth, type KeyAuthDeps } from '../plugins/api-key-auth'
import { lifecycleHeaders } from './changelog'
import { endOfTurn } from '../../core/end-of-turn'
import { openAiDuration } from '../openai-duration'
import { BodyProblem } from '../request-body'
import { sseResponse } from '../sse'

export interface InferenceRouteDeps extends InferenceDeps, KeyAuthDeps {
  /** Gives each request its log line and metrics; none when absent. */
  requests?: RequestObserver | null
}

/**
 * Headers of an admitted request: X-RateLimit-* (a 429 carries only Retry-After), and for a model
 * whose retirement is scheduled, Deprecation and Sunset (RFC 9745, RFC 8594). The reset is the
 * time until the oldest request in the key's 60-second window leaves it, which frees a place
 * (`remaining` grows by one); "until the limit is whole again" would be about a minute after every
 * request, since the window always holds the one just admitted.
 */
function setAnswerHeaders(headers: Record<string, unknown>, context: InferenceRequest): void {
  if (context.rateLimit) {
    headers['x-ratelimit-limit-requests'] = String(context.rateLimit.limit)
    headers['x-ratelimit-remaining-requests'] = String(context.rateLimit.remaining)
    headers['x-ratelimit-reset-requests'] = openAiDuration(context.rateLimit.resetMs)
  }
  if (context.model) Object.assign(headers, lifecycleHeaders(context.model))
}

/**
 * The request as core sees it; its signal fires when the client goes away. A W3C `traceparent`
 * it came with is continued in its upstream calls.
 */
function inferenceRequest(request: Request, identity: ApiKeyIdentity, requestId: string, signal: AbortSignal = request.signal): InferenceRequest {
  const context: InferenceRequest = { requestId, identity, signal, startedAtMs: Date.now() }
  const trace = continueTrace(request.headers.get('traceparent'))
  if (trace) context.trace = trace
  return context
}

/** Links the call to the request's record (its log line and metrics), when requests are observed. */
function observe(observer: RequestObserver | null | undefined, request: Request, context: InferenceRequest, route: string | undefined, body: { model: string; stream?: boolean | null }): void {
  const record = observer?.recordOf(request)
  if (record && route !== undefined) observer!.inference(record, context, route, body)
}

/** What a chat request is served with besides its body. */
export interface ChatExchange {
  identity: ApiKeyIdentity
  request: Request
  /** The response headers being built (they carry the request id). */
  headers: Record<string, unknown>
  /** Gives back what the caller held for the request (an edge place), once it has ended. */
  release: () => void
  /** The route pattern and the observer of the request's log line and metrics, when requests are observed. */
  route?: string
  requests?: RequestObserver | null
}

/**
 * Serves a validated chat request: a `chat.completion`, or with `stream: true` the server-sent
 * events, the first chunk awaited before the 200 so that early failures get a real status. The
 * answer is handed over at the end of the event loop's turn, with the others ready in it.
 */
export async function serveChat(deps: InferenceDeps, body: ChatCompletionRequest, exchange: ChatExchange) {
  const { identity, request, headers, release, route, requests } = exchange
  const requestId = headers['x-request-id'] as string
  if (body.stream !== true) {
    try {
      const context = inferenceRequest(request, identity, requestId)
      observe(requests, request, context, route, body)
      const completion = await completeChat(deps, body, context)
      setAnswerHeaders(headers, context)
      await endOfTurn()
      return completion
    } finally {
      release()
    }
  }
  // A cancelled response body also stops the upstream, whether or not the request signal fired.
  const cancelled = new AbortController()
  const context = inferenceRequest(request, identity, requestId, AbortSignal.any([request.signal, cancelled.signal]))
  observe(requests, request, context, route, body)
  let events: Awaited<ReturnType<typeof openChatStream>>
  try {
    events = await openChatStream(deps, body, context)
  } catch (error) {
    release()
    throw error
  }
  setAnswerHeaders(headers, context)
  const record = route === undefined ? undefined : requests?.recordOf(request)
  let ended = release
  if (record) {
    requests!.streamStarted(record)
    ended = () => {
      requests!.streamEnded()
      release()
    }
  }
  // The events are under way (and a cancelled body ends them) while the response waits its turn.
  const response = sseResponse(events, headers as Record<string, string>, () => cancelled.abort(), ended)
  await endOfTurn()
  return response
}

/** Refuses a body the reader could not take, and messages over the per-message limits (422). */
export function checkChatBody({ body }: { body: unknown }): void {
  if (body instanceof BodyProblem) throw body.error
  checkMessages((body as { messages?: unknown }).messages)
}

/** POST /v1/chat/completions (JSON or SSE) and POST /v1/embeddings. */
export function inferenceRoutes(deps: InferenceRouteDeps) {
  const rejectBodyProblem = ({ body }: { body: unknown }) => {
    if (body instanceof BodyProblem) throw body.error
  }

  const chat = new Elysia({ name: 'chat-completions', normalize: false })
    .derive(apiKeyAuth(deps, 'chat.completions'))
    .onTransform(checkChatBody)
    .post(
      '/v1/chat/completions',
      ({ body, identity, keyHash, request, set }) => serveChat(deps, body, { identity, request, headers: set.headers, release: deps.edge.acquire(keyHash), route: '/v1/chat/completions', requests: deps.requests }),
      { body: ChatCompletionRequest },
    )

  const embeddings = new Elysia({ name: 'embeddings', normalize: false })
    .derive(apiKeyAuth(deps, 'embeddings'))
    .onTransform(rejectBodyProblem)
    .post(
      '/v1/embeddings',
      async ({ body, identity, keyHash, request, set }) => {
        const release = deps.edge.acquire(keyHash)
        try {
          const context = inferenceRequest(request, identity, set.headers['x-request-id'] as string)
          observe(deps.requests, request, context, '/v1/embeddings', body)
          const embeddings = await createEmbeddings(deps, body, context)
          setAnswerHeaders(set.headers, context)
          await endOfTurn()
          return embeddings
        } finally {
          release()
        }
      },
      { body: EmbeddingsRequest },
    )

  return new Elysia({ name: 'inference', normalize: false }).use(chat).use(embeddings)
}
