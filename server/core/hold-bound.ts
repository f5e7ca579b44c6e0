import type { ChatCompletionRequest, ChatMessage, ContentPart } from '@nilegate/shared/schemas/chat'
import type { CatalogModel } from './catalog'
import { costMicros, formatEgp } from './money'

/**
 * What a request may cost at most, held on admission (DESIGN.md section 3). A byte-level tokenizer
 * (GPT's, Llama 3's, Qwen's) makes no token of less than one UTF-8 byte, and a SentencePiece one
 * falls back to single bytes at worst: the UTF-8 bytes of what is sent as prompt are a count of
 * tokens no tokenizer exceeds. An estimate is not: held at 4 characters a token, 16,000 digits
 * that an upstream counted a token each drove balances below zero.
 */
export interface HoldBound {
  /** Prompt tokens no tokenizer exceeds, at most the context window. */
  promptTokens: number
  /** Output tokens of every choice together: max_tokens (or the model's max output), each at most the context window, times n. */
  completionTokens: number
  /** Tokens one choice reads and writes together at most: the model's context window. */
  contextWindow: number
  /** The most the request can cost, in micro-EGP: the costliest split of the context window within the two bounds. */
  micros: bigint
}

/**
 * Tokens a chat template adds to each message at most: role markers, separators, end of turn
 * (Llama 3 and ChatML add about 5), and a name where the template writes one.
 */
export const boundTokensPerMessage = 16

/**
 * Tokens a chat template adds to each request at most: begin-of-text, a default system prompt
 * (Qwen 2.5 adds about 20 tokens, Llama 3.1 a knowledge date), the primed reply, and the
 * instructions templates wrap around tool definitions (about 100 in Qwen's and Llama 3.1's).
 */
export const boundTokensPerRequest = 256

/** Tokens an embedding model adds to each input at most: begin and end markers, an instruction prefix. */
export const boundTokensPerEmbeddingInput = 16

const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8')

// Fields of a chat request that do not reach the prompt. Every other field does, those the schema
// does not name included: they are passed to the upstream, and some (a template's `documents`,
// `chat_template_kwargs`) are written into the prompt there.
const samplingFields = new Set([
  'model',
  'temperature',
  'top_p',
  'n',
  'max_tokens',
  'max_completion_tokens',
  'stream',
  'stream_options',
  'stop',
  'frequency_penalty',
  'presence_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'seed',
  'parallel_tool_calls',
  'user',
  'metadata',
])

/** The bound of one content part: its text's bytes, or the whole context window for media. */
function partBytes(part: ContentPart, contextWindow: number): number {
  switch (part.type) {
    case 'text':
      return utf8(part.text)
    case 'refusal':
      return utf8(part.refusal)
    default:
      // An image's, a sound's or a file's tokens depend on the model's encoder, not on its bytes:
      // only the context window bounds them.
      return contextWindow
  }
}

function messageBytes(message: ChatMessage, contextWindow: number): number {
  let bytes = boundTokensPerMessage
  const content = message.content
  if (typeof content === 'string') bytes += utf8(content)
  else if (Array.isArray(content)) for (const part of content) bytes += partBytes(part, contextWindow)
  if ('name' in message && typeof message.name === 'string') bytes += utf8(message.name)
  if (message.role === 'tool') bytes += utf8(message.tool_call_id)
  if (message.role === 'assistant') {
    if (typeof message.refusal === 'string') bytes += utf8(message.refusal)
    for (const call of message.tool_calls ?? []) bytes += utf8(call.id) + utf8(call.function.name) + utf8(call.function.arguments)
  }
  return bytes
}

/**
 * Prompt tokens no tokenizer exceeds for a chat request, before the context window caps them: the
 * UTF-8 bytes of the messages, of the tool definitions, tool choice and response schema as JSON,
 * and of every field the schema does not name, plus the template's overhead per message and per
 * request; a media part counts as the whole context window.
 */
export function chatPromptBound(body: ChatCompletionRequest, contextWindow: number): number {
  let bytes = boundTokensPerRequest
  for (const message of body.messages) {
    bytes += messageBytes(message, contextWindow)
    // Past the window, the sum no longer matters: a long conversation is not read to its end.
    if (bytes >= contextWindow) return contextWindow
  }
  for (const field in body) {
    if (field === 'messages' || samplingFields.has(field)) continue
    const value = (body as Record<string, unknown>)[field]
    if (value !== undefined && value !== null) bytes += utf8(JSON.stringify(value) ?? '')
  }
  return bytes
}

/**
 * The hold of a request reading at most `promptTokens` and writing at most `maxOutputTokens` in
 * each of `choices` choices. No choice reads and writes more than the context window together, so
 * the cost is the larger of the two corners of that limit: the whole prompt with what output fits
 * beside it, or the whole output with what prompt fits beside it (the pricier kind of token first).
 * The prompt is read once for every choice.
 */
export function holdBound(
  model: Pick<CatalogModel, 'contextWindow' | 'inputPriceMicrosPerM' | 'outputPriceMicrosPerM'>,
  promptTokens: number,
  maxOutputTokens: number,
  choices = 1,
): HoldBound {
  const window = model.contextWindow
  const prompt = Math.min(promptTokens, window)
  const output = Math.min(maxOutputTokens, window)
  const cost = (p: number, c: number) => costMicros(p, c * choices, model.inputPriceMicrosPerM, model.outputPriceMicrosPerM)
  const wholePrompt = cost(prompt, Math.min(output, window - prompt))
  const wholeOutput = cost(Math.min(prompt, window - output), output)
  return { promptTokens: prompt, completionTokens: output * choices, contextWindow: window, micros: wholePrompt > wholeOutput ? wholePrompt : wholeOutput }
}

/** The hold of a chat request: its prompt bound, and max_tokens (or the model's max output) for each of its n choices. */
export function chatHoldBound(model: CatalogModel, body: ChatCompletionRequest): HoldBound {
  const maxOutput = body.max_completion_tokens ?? body.max_tokens ?? model.maxOutputTokens
  return holdBound(model, chatPromptBound(body, model.contextWindow), maxOutput, body.n ?? 1)
}

/**
 * The hold of an embeddings request: each input's UTF-8 bytes (the text token ids decode to, and
 * at least as many as the ids) plus the model's overhead per input, each at most the context window,
 * which is all an input is read of. `extraBytes`: fields passed to the upstream besides the input,
 * which an upstream may prefix to each input (an instruction).
 */
export function embeddingsHoldBound(model: CatalogModel, items: readonly string[], idCounts: readonly number[] | null, extraBytes = 0): HoldBound {
  let prompt = 0
  for (let i = 0; i < items.length; i++) {
    const itemTokens = Math.max(utf8(items[i]!), idCounts?.[i] ?? 0) + boundTokensPerEmbeddingInput + extraBytes
    prompt += Math.min(itemTokens, model.contextWindow)
  }
  // Each input is read on its own: the window caps each of them, not their sum.
  return { promptTokens: prompt, completionTokens: 0, contextWindow: model.contextWindow, micros: costMicros(prompt, 0, model.inputPriceMicrosPerM, model.outputPriceMicrosPerM) }
}

/** What a request is billed of the usage reported for it: never more than its hold. */
export interface BilledUsage {
  promptTokens: number
  completionTokens: number
  costMicros: bigint
  /** Reported above the hold: recorded for operators, never charged. */
  unbilledPromptTokens: number
  unbilledCompletionTokens: number
  unbilledMicros: bigint
}

/**
 * The usage an upstream reported, billed within the hold: tokens beyond the hold's bounds, and
 * cost beyond its amount, are not charged (an upstream that miscounts or misreports). Usage within
 * the hold is billed as reported.
 */
export function billWithinHold(
  hold: HoldBound | null,
  promptTokens: number,
  completionTokens: number,
  model: Pick<CatalogModel, 'inputPriceMicrosPerM' | 'outputPriceMicrosPerM'>,
): BilledUsage {
  const reportedMicros = costMicros(promptTokens, completionTokens, model.inputPriceMicrosPerM, model.outputPriceMicrosPerM)
  if (hold === null || reportedMicros <= hold.micros) {
    return { promptTokens, completionTokens, costMicros: reportedMicros, unbilledPromptTokens: 0, unbilledCompletionTokens: 0, unbilledMicros: 0n }
  }
  const billedPrompt = Math.min(promptTokens, hold.promptTokens)
  const billedCompletion = Math.min(completionTokens, hold.completionTokens)
  const billedAtPrices = costMicros(billedPrompt, billedCompletion, model.inputPriceMicrosPerM, model.outputPriceMicrosPerM)
  const billedMicros = billedAtPrices < hold.micros ? billedAtPrices : hold.micros
  return {
    promptTokens: billedPrompt,
    completionTokens: billedCompletion,
    costMicros: billedMicros,
    unbilledPromptTokens: promptTokens - billedPrompt,
    unbilledCompletionTokens: completionTokens - billedCompletion,
    unbilledMicros: reportedMicros - billedMicros,
  }
}

/** The 402 `insufficient_balance` message: what the hold was made of and what the user can do. */
export function insufficientBalanceMessage(hold: HoldBound): string {
  const output = hold.completionTokens > 0 ? ` and ${hold.completionTokens} output tokens (max_tokens, or the model's max output, times n)` : ''
  return (
    `This request holds up to ${formatEgp(hold.micros)} EGP, more than the balance has left: the most it can cost, ` +
    `for a prompt of up to ${hold.promptTokens} tokens (a token per UTF-8 byte, the most any tokenizer makes, plus chat framing)${output}, ` +
    `within the context window of ${hold.contextWindow} tokens. Lower max_tokens, shorten the prompt, or top up.`
  )
}
