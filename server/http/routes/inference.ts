import { Elysia } from 'elysia'
import { ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { EmbeddingsRequest } from '@nilegate/shared/schemas/embeddings'
import type { ApiKeyCache } from '../../core/authenticate'
import type { EdgeLimiter } from '../../core/edge-limiter'
import { completeChat, openChatStream } from '../../core/chat-completions'
import { checkMessages } from '../../core/check-messages'
import { createEmbeddings } from '../../core/embeddings'
import type { InferenceDeps, InferenceRequest } from '../../core/inference'
import type { ApiKeyIdentity } from '../../core/ports'
import { apiKeyAuth } from '../plugins/api-key-auth'
import { BodyProblem } from '../request-body'
import { sseResponse } from '../sse'

export interface InferenceRouteDeps extends InferenceDeps {
  keys: ApiKeyCache
  edge: EdgeLimiter
}

/** X-RateLimit-* headers of an admitted request (a 429 carries only Retry-After). */
function setRateLimitHeaders(headers: Record<string, unknown>, context: InferenceRequest): void {
  if (!context.rateLimit) return
  headers['x-ratelimit-limit-requests'] = String(context.rateLimit.limit)
  headers['x-ratelimit-remaining-requests'] = String(context.rateLimit.remaining)
}

/** The request as core sees it; its signal fires when the client goes away. */
function inferenceRequest(request: Request, identity: ApiKeyIdentity, requestId: string, signal: AbortSignal = request.signal): InferenceRequest {
  return { requestId, identity, signal, startedAtMs: Date.now() }
}

/** POST /v1/chat/completions (JSON or SSE) and POST /v1/embeddings. */
export function inferenceRoutes(deps: InferenceRouteDeps) {
  const rejectBodyProblem = ({ body }: { body: unknown }) => {
    if (body instanceof BodyProblem) throw body.error
  }

  const chat = new Elysia({ name: 'chat-completions', normalize: false })
    .derive(apiKeyAuth(deps.keys, deps.edge, 'chat.completions'))
    .onTransform(({ body }) => {
      rejectBodyProblem({ body })
      checkMessages((body as { messages?: unknown }).messages)
    })
    .post(
      '/v1/chat/completions',
      async ({ body, identity, keyHash, request, set }) => {
        const requestId = set.headers['x-request-id'] as string
        const release = deps.edge.acquire(keyHash)
        if (body.stream !== true) {
          try {
            const context = inferenceRequest(request, identity, requestId)
            const completion = await completeChat(deps, body, context)
            setRateLimitHeaders(set.headers, context)
            return completion
          } finally {
            release()
          }
        }
        // A cancelled response body also stops the upstream, whether or not the request signal fired.
        const cancelled = new AbortController()
        const context = inferenceRequest(request, identity, requestId, AbortSignal.any([request.signal, cancelled.signal]))
        let events: Awaited<ReturnType<typeof openChatStream>>
        try {
          events = await openChatStream(deps, body, context)
        } catch (error) {
          release()
          throw error
        }
        setRateLimitHeaders(set.headers, context)
        return sseResponse(events, set.headers as Record<string, string>, () => cancelled.abort(), release)
      },
      { body: ChatCompletionRequest },
    )

  const embeddings = new Elysia({ name: 'embeddings', normalize: false })
    .derive(apiKeyAuth(deps.keys, deps.edge, 'embeddings'))
    .onTransform(rejectBodyProblem)
    .post(
      '/v1/embeddings',
      async ({ body, identity, keyHash, request, set }) => {
        const release = deps.edge.acquire(keyHash)
        try {
          const context = inferenceRequest(request, identity, set.headers['x-request-id'] as string)
          const embeddings = await createEmbeddings(deps, body, context)
          setRateLimitHeaders(set.headers, context)
          return embeddings
        } finally {
          release()
        }
      },
      { body: EmbeddingsRequest },
    )

  return new Elysia({ name: 'inference', normalize: false }).use(chat).use(embeddings)
}
