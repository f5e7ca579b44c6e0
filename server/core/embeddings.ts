import { GatewayError } from '@nilegate/shared/errors'
import type { EmbeddingsRequest, EmbeddingsResponse } from '@nilegate/shared/schemas/embeddings'
import { estimateTextTokens } from './estimate-tokens'
import { embeddingsHoldBound } from './hold-bound'
import { InferenceCall, type InferenceDeps, type InferenceRequest } from './inference'
import type { EmbeddingInput } from './ports'
import { decodeTokenIds } from './token-ids'

/** Per-call budgets of the embeddings endpoint (DESIGN.md section 9). */
export const maxTokensPerEmbeddingItem = 8_192
export const maxEmbeddingItems = 2_048
export const maxTokensPerEmbeddingCall = 300_000

/** The input as sent: texts, or arrays of token ids. */
type SentInput = { kind: 'text'; items: string[] } | { kind: 'tokens'; items: number[][] }

/** Normalises the four input shapes and enforces empty_input and the token budgets. */
export function normalizeEmbeddingInput(input: EmbeddingsRequest['input'], itemTokenLimit: number): { input: SentInput; estimatedTokens: number } {
  const items: Array<string | number[]> = typeof input === 'string' ? [input] : input.length > 0 && typeof input[0] === 'number' ? [input as number[]] : (input as Array<string | number[]>)
  if (items.length === 0) throw new GatewayError('empty_input', 'input is an empty array.', 'input')
  if (items.length > maxEmbeddingItems) {
    throw new GatewayError('input_too_large', `input has ${items.length} items; the limit is ${maxEmbeddingItems} per call.`, 'input')
  }
  const kind = typeof items[0] === 'string' ? 'text' : 'tokens'
  let total = 0
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    const param = typeof input === 'string' || items.length === 1 ? 'input' : `input[${i}]`
    if ((typeof item === 'string') !== (kind === 'text')) throw new GatewayError('invalid_request', 'input must not mix strings and token arrays.', param)
    if (item.length === 0) throw new GatewayError('empty_input', `${param} is empty.`, param)
    const tokens = typeof item === 'string' ? estimateTextTokens(item) : item.length
    if (tokens > itemTokenLimit) throw new GatewayError('input_too_large', `${param} has about ${tokens} tokens; the limit is ${itemTokenLimit} per input.`, param)
    total += tokens
  }
  if (total > maxTokensPerEmbeddingCall) {
    throw new GatewayError('input_too_large', `input has about ${total} tokens in all; the limit is ${maxTokensPerEmbeddingCall} per call.`, 'input')
  }
  const normalized: SentInput = kind === 'text' ? { kind, items: items as string[] } : { kind, items: items as number[][] }
  return { input: normalized, estimatedTokens: total }
}

function encodeVector(vector: Float32Array, format: 'float' | 'base64'): number[] | string {
  if (format === 'base64') return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64')
  return Array.from(vector)
}

/** Embeds the input; vectors travel as float arrays or as base64 little-endian float32. */
export async function createEmbeddings(deps: InferenceDeps, body: EmbeddingsRequest, request: InferenceRequest): Promise<EmbeddingsResponse> {
  const call = new InferenceCall(deps, request, body.model, 'embeddings', false)
  const { model } = call
  const { input: sent, estimatedTokens } = normalizeEmbeddingInput(body.input, Math.min(maxTokensPerEmbeddingItem, model.contextWindow))
  const dimensions = body.dimensions ?? null
  if (dimensions !== null) {
    if (!model.supportsDimensions) throw new GatewayError('invalid_request', `The model '${model.id}' does not support dimensions.`, 'dimensions')
    if (model.embeddingDimensions !== null && dimensions > model.embeddingDimensions) {
      throw new GatewayError('invalid_request', `dimensions is ${dimensions}; '${model.id}' gives at most ${model.embeddingDimensions}.`, 'dimensions')
    }
  }
  // Ids are decoded before admission: an id that is no token is refused without holding credit.
  const items = sent.kind === 'text' ? sent.items : await decodeTokenIds(sent.items, Array.isArray(body.input[0]))
  const input: EmbeddingInput = { items, tokens: estimatedTokens }
  const { model: _model, input: _input, encoding_format: _format, dimensions: _dimensions, ...extra } = body
  const extraBytes = Object.keys(extra).length === 0 ? 0 : Buffer.byteLength(JSON.stringify(extra))
  await call.admit(embeddingsHoldBound(model, items, sent.kind === 'tokens' ? sent.items.map((ids) => ids.length) : null, extraBytes))
  const result = await call.route((provider, providerCall) => provider.embed(input, dimensions, providerCall, extra)).catch((error: unknown) => call.fail(error))
  call.record(call.clientGone ? 499 : 200, result.promptTokens, 0)
  const format = body.encoding_format ?? 'float'
  return {
    object: 'list',
    data: result.vectors.map((vector, index) => ({ object: 'embedding', index, embedding: encodeVector(vector, format) })),
    model: model.id,
    usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
  }
}
