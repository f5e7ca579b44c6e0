import { GatewayError } from '@nilegate/shared/errors'
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { estimateChatPromptTokens, estimateTextTokens } from '../../core/estimate-tokens'
import type { EmbeddingInput, EmbeddingResult, Provider, ProviderCall } from '../../core/ports'
import { UpstreamChunkStream } from './upstream-chunk-stream'
import { hasChoices, isRecord, isTokenCount, reportedUsage } from './upstream-answers'
import { upstreamMalformedError } from './upstream-errors'
import { UpstreamExchange } from './upstream-exchange'
import { usageOf, type Usage } from '@nilegate/shared/schemas/common'

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw upstreamMalformedError(what)
  }
}

/** Usage from the estimator, for upstreams that report none (or counts that are not token counts). */
function estimateUsage(body: ChatCompletionRequest, choices: unknown[]): Usage {
  const promptTokens = estimateChatPromptTokens(body)
  let completionTokens = 0
  for (const choice of choices) {
    const message = isRecord(choice) && isRecord(choice.message) ? choice.message : {}
    if (typeof message.content === 'string') completionTokens += estimateTextTokens(message.content)
    if (!Array.isArray(message.tool_calls)) continue
    for (const call of message.tool_calls) {
      const fn = isRecord(call) && isRecord(call.function) ? call.function : {}
      if (typeof fn.name === 'string') completionTokens += estimateTextTokens(fn.name)
      if (typeof fn.arguments === 'string') completionTokens += estimateTextTokens(fn.arguments)
    }
  }
  return usageOf(promptTokens, completionTokens)
}

/** Decodes one embedding: base64 of little-endian float32, or a JSON array of numbers. */
function toVector(embedding: unknown): Float32Array | null {
  if (typeof embedding === 'string') {
    const bytes = Buffer.from(embedding, 'base64')
    if (bytes.byteLength === 0 || bytes.byteLength % 4 !== 0) return null
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const vector = new Float32Array(bytes.byteLength / 4)
    for (let i = 0; i < vector.length; i++) vector[i] = view.getFloat32(i * 4, true)
    return vector
  }
  if (Array.isArray(embedding) && embedding.length > 0 && embedding.every((value) => typeof value === 'number')) return Float32Array.from(embedding)
  return null
}

function toVectors(answer: unknown, count: number): Float32Array[] {
  const data = isRecord(answer) ? answer.data : undefined
  if (!Array.isArray(data) || data.length !== count) throw upstreamMalformedError('an embeddings answer with the wrong number of vectors')
  const vectors: Float32Array[] = new Array(count)
  data.forEach((item, position) => {
    const index = isRecord(item) && typeof item.index === 'number' ? item.index : position
    const vector = isRecord(item) ? toVector(item.embedding) : null
    if (!vector || index < 0 || index >= count || vectors[index]) throw upstreamMalformedError('an embeddings answer that could not be decoded')
    vectors[index] = vector
  })
  return vectors
}

/**
 * A request without a token limit is sent with the model's max output: admission held the cost of
 * that much, and an upstream left unbounded could produce more than was held.
 */
function outputLimit(body: ChatCompletionRequest, call: ProviderCall): { max_tokens?: number } {
  return body.max_tokens == null && body.max_completion_tokens == null ? { max_tokens: call.model.maxOutputTokens } : {}
}

/**
 * Whether an upstream refused a request on account of a role: chat templates that know only system,
 * user, assistant and tool (many that vLLM serves, older llama.cpp) refuse `developer`, which
 * current OpenAI clients send for instructions.
 */
function refusesRole(error: unknown): boolean {
  return error instanceof GatewayError && error.code === 'invalid_request' && /\b(developer|roles?)\b/i.test(error.message)
}

/** The messages with each `developer` one sent as `system`, or null when there is none. */
function developerAsSystem(messages: ChatCompletionRequest['messages']): ChatCompletionRequest['messages'] | null {
  if (!messages.some((message) => message.role === 'developer')) return null
  return messages.map((message) => (message.role === 'developer' ? { ...message, role: 'system' } : message))
}

/**
 * Posts a chat request; one refused on account of a role while it had `developer` messages is sent
 * once more with them as `system`, which every template knows and OpenAI treats alike.
 */
async function postChat(exchange: UpstreamExchange, payload: ChatCompletionRequest, accept: string): Promise<Response> {
  try {
    return await exchange.post('/chat/completions', payload, accept)
  } catch (error) {
    const messages = refusesRole(error) ? developerAsSystem(payload.messages) : null
    if (messages === null) throw error
    return exchange.post('/chat/completions', { ...payload, messages }, accept)
  }
}

/**
 * The client's request as the upstream gets it: under the deployment's model name, with a token
 * limit, its `developer` messages as `system` where the deployment says so, and without the fields
 * that mean something only beside another (`top_logprobs` without `logprobs: true`, `tool_choice`
 * without tools), which vLLM refuses with 400: accepted and ignored, as the simulator does. The
 * caller adds `stream` and its options.
 */
function forUpstream(body: ChatCompletionRequest, call: ProviderCall): ChatCompletionRequest {
  const { stream_options: _streamOptions, top_logprobs, tool_choice, ...rest } = body
  const asSystem = call.deployment.developerRole === 'system' ? developerAsSystem(body.messages) : null
  return {
    ...rest,
    ...(asSystem === null ? {} : { messages: asSystem }),
    ...(body.logprobs === true && top_logprobs != null ? { top_logprobs } : {}),
    ...(body.tools && body.tools.length > 0 && tool_choice !== undefined ? { tool_choice } : {}),
    ...outputLimit(body, call),
    model: call.deployment.upstreamModel,
  }
}

/**
 * A provider for any upstream speaking the OpenAI wire format (vLLM, SGLang, TGI, llama.cpp, Ollama,
 * hosted APIs). The client's body goes through with the deployment's model name; streams always ask
 * for usage; chunks are relayed as they arrive; the upstream request ends when the client leaves.
 */
export class OpenAICompatibleProvider implements Provider {
  async chat(body: ChatCompletionRequest, call: ProviderCall): Promise<ChatCompletion> {
    const exchange = new UpstreamExchange(call)
    try {
      const payload = { ...forUpstream(body, call), stream: false }
      const response = await postChat(exchange, payload, 'application/json')
      const answer = parseJson(await exchange.text(response), 'a completion that is not JSON')
      if (!isRecord(answer) || !Array.isArray(answer.choices)) throw upstreamMalformedError('a completion without choices')
      if (!hasChoices(answer.choices, 'message')) throw upstreamMalformedError('a completion whose choices are not messages')
      answer.model = call.model.id
      answer.usage = reportedUsage(answer.usage) ?? estimateUsage(body, answer.choices)
      return answer as unknown as ChatCompletion
    } finally {
      exchange.close()
    }
  }

  async streamChat(body: ChatCompletionRequest, call: ProviderCall): Promise<AsyncIterable<ChatCompletionChunk>> {
    const payload = { ...forUpstream(body, call), stream: true, stream_options: { ...body.stream_options, include_usage: true } }
    // A chunk read after the client left would count as relayed: the stream stops at once.
    const exchange = new UpstreamExchange(call, { followClient: true })
    exchange.watch('connect', call.deployment.timeouts.connectMs)
    try {
      const response = await postChat(exchange, payload, 'text/event-stream')
      exchange.unwatch()
      if (!response.body) throw upstreamMalformedError('an empty stream')
      return new UpstreamChunkStream(response.body, exchange, call)
    } catch (error) {
      exchange.close()
      throw error
    }
  }

  async embed(input: EmbeddingInput, dimensions: number | null, call: ProviderCall, extra: Record<string, unknown> = {}): Promise<EmbeddingResult> {
    const exchange = new UpstreamExchange(call)
    const payload: Record<string, unknown> = { ...extra, model: call.deployment.upstreamModel, input: input.items, encoding_format: 'base64' }
    if (dimensions !== null) payload.dimensions = dimensions
    try {
      const response = await exchange.post('/embeddings', payload, 'application/json').catch((error: unknown) => {
        if (!rejectsBase64(error)) throw error
        return exchange.post('/embeddings', { ...payload, encoding_format: 'float' }, 'application/json')
      })
      const answer = parseJson(await exchange.text(response), 'an embeddings answer that is not JSON')
      const vectors = toVectors(answer, input.items.length)
      const usage = isRecord(answer) ? answer.usage : undefined
      const reported = isRecord(usage) && isTokenCount(usage.prompt_tokens) ? usage.prompt_tokens : null
      return { vectors, promptTokens: reported ?? input.tokens }
    } finally {
      exchange.close()
    }
  }
}

/** Some servers (older vLLM, llama.cpp) answer 400 to base64 embeddings; they get one retry asking for floats. */
function rejectsBase64(error: unknown): boolean {
  return error instanceof GatewayError && error.code === 'invalid_request' && /base64|encoding_format/i.test(error.message)
}
