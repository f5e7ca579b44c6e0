/**
 * What the simulator answers, decided up front from the request: the same messages always give the
 * same text, tool calls and finish reasons; only ids depend on the request id.
 */
import { GatewayError } from '@nilegate/shared/errors'
import type { ChatCompletionRequest, ChatMessage } from '@nilegate/shared/schemas/chat'
import type { CatalogModel } from '../../core/catalog'
import { isArabicScript } from '../../core/estimate-tokens'
import { replyVocabulary, type Sentence } from './reply-vocabulary'
import { hashSeed, hashStep, mixHash, seededRandom, stableHash } from './stable-hash'
import { toolArguments } from './tool-arguments'

/** A text answer: each piece is one simulated token. */
export interface TextReply {
  kind: 'text'
  pieces: string[]
  /** Tokens generated, including those of a stop sequence that was cut off. */
  tokens: number
  finishReason: 'stop' | 'length'
}

/** One simulated function call; its arguments stream as fragments of one token each. */
export interface SimulatedToolCall {
  id: string
  name: string
  fragments: string[]
}

/** An answer made of tool calls. */
export interface ToolCallReply {
  kind: 'tool_calls'
  calls: SimulatedToolCall[]
  tokens: number
  finishReason: 'tool_calls' | 'length'
}

export type SimulatedReply = TextReply | ToolCallReply

type Tool = NonNullable<ChatCompletionRequest['tools']>[number]

const minDefaultTokens = 16
const defaultTokensSpread = 33
const argumentFragmentChars = 4

function messageText(message: ChatMessage): string {
  const content = message.content
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  let text = ''
  for (const part of content) if (part.type === 'text') text += part.text
  return text
}

function conversationHash(body: ChatCompletionRequest): number {
  let hash = hashSeed
  for (const message of body.messages) {
    hash = hashStep(stableHash(message.role, hash), 0)
    hash = hashStep(stableHash(messageText(message), hash), 1)
  }
  return body.seed == null ? hash : stableHash(String(body.seed), hash)
}

function isMostlyArabic(text: string): boolean {
  let arabic = 0
  let latin = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (isArabicScript(code)) arabic++
    else if ((code >= 65 && code <= 90) || (code >= 97 && code <= 122)) latin++
  }
  return arabic > latin
}

function lastUserText(messages: readonly ChatMessage[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return messageText(messages[i]!)
  return null
}

/** The tools to call: none means a text answer. Auto calls the tools the last user message names. */
function selectTools(body: ChatCompletionRequest, hash: number): Tool[] {
  const tools = body.tools ?? []
  const choice = body.tool_choice ?? 'auto'
  if (tools.length === 0 || choice === 'none') return []
  if (typeof choice === 'object') {
    const named = tools.find((tool) => tool.function.name === choice.function.name)
    if (!named) throw new GatewayError('invalid_request', `tool_choice names the function '${choice.function.name}', which is not in tools.`, 'tool_choice')
    return [named]
  }
  const last = body.messages[body.messages.length - 1]!
  const text = last.role === 'user' ? messageText(last) : ''
  const mentioned = text === '' ? [] : tools.filter((tool) => text.includes(tool.function.name))
  const selected = mentioned.length > 0 ? mentioned : choice === 'required' ? [tools[hash % tools.length]!] : []
  return body.parallel_tool_calls === false ? selected.slice(0, 1) : selected
}

function naturalPieces(sentences: readonly Sentence[], random: () => number): string[] {
  const target = minDefaultTokens + (random() % defaultTokensSpread)
  const pieces: string[] = []
  let previous = -1
  while (pieces.length < target) {
    let index = random() % sentences.length
    if (index === previous) index = (index + 1) % sentences.length
    previous = index
    for (const piece of sentences[index]!) pieces.push(piece)
  }
  pieces[0] = pieces[0]!.slice(1)
  return pieces
}

/** Cuts the text before the earliest stop sequence; null when none occurs. */
function cutAtStop(pieces: string[], stops: readonly string[]): { pieces: string[]; tokens: number } | null {
  const text = pieces.join('')
  let cut = -1
  let matchEnd = -1
  for (const stop of stops) {
    if (stop === '') continue
    const at = text.indexOf(stop)
    if (at !== -1 && (cut === -1 || at < cut)) {
      cut = at
      matchEnd = at + stop.length
    }
  }
  if (cut === -1) return null
  const kept: string[] = []
  let tokens = 0
  let offset = 0
  for (const piece of pieces) {
    const end = offset + piece.length
    if (offset < cut) kept.push(end <= cut ? piece : piece.slice(0, cut - offset))
    if (offset < matchEnd) tokens++
    offset = end
  }
  return { pieces: kept, tokens }
}

/**
 * The text of an answer in JSON mode: for `json_schema`, an object that fits the schema; for
 * `json_object`, the natural answer under one key. Null for plain text.
 */
function jsonAnswer(format: ChatCompletionRequest['response_format'], sentences: readonly Sentence[], random: () => number): string | null {
  if (format?.type === 'json_schema') return toolArguments(format.json_schema.schema, random)
  if (format?.type === 'json_object') return JSON.stringify({ answer: naturalPieces(sentences, random).join('') })
  return null
}

/** A text answer of these pieces, cut at the token cap (finish reason `length`) or before a stop sequence. */
function textReply(pieces: string[], cap: number, stops: readonly string[]): TextReply {
  let finishReason: TextReply['finishReason'] = 'stop'
  if (pieces.length > cap) {
    pieces.length = cap
    finishReason = 'length'
  }
  const stopped = stops.length > 0 ? cutAtStop(pieces, stops) : null
  if (stopped) return { kind: 'text', pieces: stopped.pieces, tokens: stopped.tokens, finishReason: 'stop' }
  return { kind: 'text', pieces, tokens: pieces.length, finishReason }
}

function toFragments(text: string): string[] {
  const fragments: string[] = []
  for (let i = 0; i < text.length; i += argumentFragmentChars) fragments.push(text.slice(i, i + argumentFragmentChars))
  return fragments
}

function callId(idSeed: number, index: number): string {
  const first = mixHash(hashStep(idSeed, index))
  const second = mixHash(hashStep(first, index))
  const third = mixHash(hashStep(second, index))
  return `call_${first.toString(16).padStart(8, '0')}${second.toString(16).padStart(8, '0')}${third.toString(16).padStart(8, '0')}`
}

/** Calls the tools in order; the name costs one token, each argument fragment one more, up to the cap. */
function toolCallReply(tools: Tool[], random: () => number, idSeed: number, cap: number): ToolCallReply {
  const calls: SimulatedToolCall[] = []
  let tokens = 0
  let finishReason: ToolCallReply['finishReason'] = 'tool_calls'
  for (const [index, tool] of tools.entries()) {
    if (tokens >= cap) {
      finishReason = 'length'
      break
    }
    const fragments = toFragments(toolArguments(tool.function.parameters, random))
    tokens += 1
    if (fragments.length > cap - tokens) {
      fragments.length = cap - tokens
      finishReason = 'length'
    }
    tokens += fragments.length
    calls.push({ id: callId(idSeed, index), name: tool.function.name, fragments })
    if (finishReason === 'length') break
  }
  return { kind: 'tool_calls', calls, tokens, finishReason }
}

/** The `n` answers to a request, each capped at `max_completion_tokens ?? max_tokens` and the model's output limit. */
export function planReplies(body: ChatCompletionRequest, model: CatalogModel, requestId: string): SimulatedReply[] {
  const hash = conversationHash(body)
  const tools = selectTools(body, hash)
  const lastUser = lastUserText(body.messages)
  const sentences = lastUser !== null && isMostlyArabic(lastUser) ? replyVocabulary.arabic : replyVocabulary.english
  const requested = body.max_completion_tokens ?? body.max_tokens ?? Number.POSITIVE_INFINITY
  const cap = Math.min(requested, model.maxOutputTokens > 0 ? model.maxOutputTokens : Number.POSITIVE_INFINITY)
  const stops = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop
  const replies: SimulatedReply[] = []
  for (let index = 0; index < (body.n ?? 1); index++) {
    const random = seededRandom(mixHash(hashStep(hash, index)))
    if (tools.length > 0) {
      replies.push(toolCallReply(tools, random, stableHash(requestId, hashStep(hashSeed, index)), cap))
      continue
    }
    // JSON streams in fragments of the estimator's four characters a token, as tool arguments do.
    const json = jsonAnswer(body.response_format, sentences, random)
    replies.push(textReply(json === null ? naturalPieces(sentences, random) : toFragments(json), cap, stops))
  }
  return replies
}
