import { GatewayError } from '@nilegate/shared/errors'
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { usageOf, type Usage } from '@nilegate/shared/schemas/common'
import { estimateChatPromptTokens, estimateTextTokens } from './estimate-tokens'
import { chatHoldBound } from './hold-bound'
import { InferenceCall, type InferenceDeps, type InferenceRequest } from './inference'
import type { ChatChunkIterator } from './ports'

/**
 * What a stream sends next: chunks (those that arrived from the upstream together), or a failure
 * after the stream began. `last` marks the chunks after which the stream ends: they and its end
 * leave in one write.
 */
export type ChatStreamEvent = { chunks: ChatCompletionChunk[]; last?: boolean; error?: undefined } | { error: GatewayError; chunks?: undefined; last?: undefined }

/** Resolves the model, checks max_tokens, and admits the request at the most it can cost. */
async function openCall(deps: InferenceDeps, body: ChatCompletionRequest, request: InferenceRequest): Promise<InferenceCall> {
  const call = new InferenceCall(deps, request, body.model, 'chat.completions', body.stream === true)
  const requested = body.max_completion_tokens ?? body.max_tokens
  if (requested != null && requested > call.model.contextWindow) {
    const param = body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens'
    throw new GatewayError('max_tokens_exceeded', `${param} is ${requested}, above the context window of '${call.model.id}' (${call.model.contextWindow} tokens).`, param)
  }
  await call.admit(chatHoldBound(call.model, body))
  return call
}

/** A whole chat completion. */
export async function completeChat(deps: InferenceDeps, body: ChatCompletionRequest, request: InferenceRequest): Promise<ChatCompletion> {
  const call = await openCall(deps, body, request)
  const completion = await call.route((provider, providerCall) => provider.chat(body, providerCall)).catch((error: unknown) => call.fail(error))
  completion.model = call.model.id
  const { usage } = completion
  call.record(call.clientGone ? 499 : 200, usage.prompt_tokens, usage.completion_tokens)
  return completion
}

function asGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error
  return new GatewayError('internal_error', 'The stream failed on the server. Retry with backoff.')
}

/**
 * A streamed chat completion. Resolves once the first chunk exists, so failures before the first
 * byte reach the client as real statuses; later failures become one error event. Usage is recorded
 * once on every exit path, from upstream usage when reported, else estimated from what was relayed;
 * a client that goes away (499) pays for the tokens produced until then.
 */
export async function openChatStream(deps: InferenceDeps, body: ChatCompletionRequest, request: InferenceRequest): Promise<AsyncGenerator<ChatStreamEvent, void>> {
  const call = await openCall(deps, body, request)
  const includeUsage = body.stream_options?.include_usage === true
  // Failing over is safe until the first chunk exists: nothing reached the client before that.
  const { upstream, first } = await call
    .route(
      async (provider, providerCall) => {
        const upstream: ChatChunkIterator = (await provider.streamChat(body, providerCall))[Symbol.asyncIterator]()
        try {
          const first = await upstream.next()
          request.firstChunkAt = performance.now()
          return { upstream, first }
        } catch (error) {
          upstream.return?.().catch(() => {})
          throw error
        }
      },
      { hold: true },
    )
    .catch((error: unknown) => call.fail(error))

  async function* relay(): AsyncGenerator<ChatStreamEvent, void> {
    let reported: Usage | null = null
    let relayedText = ''
    let lastChunk: ChatCompletionChunk | null = null
    let failure: GatewayError | null = null
    let usage: Usage | null = null
    // The chunks that arrived with the upstream's end, sent with the end of the stream.
    let tail: ChatCompletionChunk[] = []
    try {
      for (let result = first; !result.done; result = await upstream.next()) {
        // This chunk and those that arrived with it (`ready()`), relayed together.
        const chunks = upstream.ready?.() ?? []
        chunks.unshift(result.value)
        let kept = 0
        for (const chunk of chunks) {
          if (chunk.choices.length === 0) {
            if (chunk.usage) reported = chunk.usage
            continue
          }
          for (const choice of chunk.choices) {
            const delta = choice.delta
            if (delta.content) relayedText += delta.content
            if (delta.tool_calls) for (const toolCall of delta.tool_calls) relayedText += toolCall.function?.arguments ?? ''
          }
          chunk.model = call.model.id
          if (!includeUsage) delete chunk.usage
          chunks[kept++] = chunk
        }
        chunks.length = kept
        if (kept > 0) lastChunk = chunks.at(-1)!
        if (upstream.ended?.()) {
          tail = chunks
          break
        }
        if (kept > 0) yield { chunks }
      }
    } catch (error) {
      if (!call.clientGone) failure = request.streamError = asGatewayError(error)
    } finally {
      usage = reported ?? usageOf(estimateChatPromptTokens(body), estimateTextTokens(relayedText))
      const status = call.clientGone ? 499 : failure ? failure.status : 200
      call.record(status, usage.prompt_tokens, usage.completion_tokens)
      call.finish(failure ?? undefined)
      if (call.clientGone || failure) upstream.return?.().catch(() => {})
    }
    if (failure) {
      yield { error: failure }
      return
    }
    if (includeUsage && lastChunk && usage) {
      tail.push({ id: lastChunk.id, object: 'chat.completion.chunk', created: lastChunk.created, model: call.model.id, choices: [], usage })
    }
    if (tail.length > 0) yield { chunks: tail, last: true }
  }
  return relay()
}
