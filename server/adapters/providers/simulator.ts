import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChoiceLogprobs, TokenLogprob, ToolCallDelta } from '@nilegate/shared/schemas/chat'
import { estimateChatPromptTokens } from '../../core/estimate-tokens'
import type { ChatChunkIterator, EmbeddingInput, EmbeddingResult, Provider, ProviderCall } from '../../core/ports'
import { embedText } from './hashed-embedding'
import { planReplies, type SimulatedReply, type SimulatedToolCall } from './simulated-reply'
import { stableHash } from './stable-hash'
import { usageOf } from '@nilegate/shared/schemas/common'

/** Vector size when neither the request nor the catalog names one. */
export const defaultEmbeddingDimensions = 1024

type Delta = ChatCompletionChunk['choices'][number]['delta']

interface Envelope {
  id: string
  created: number
  model: string
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted.', 'AbortError')
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts; leaves no timer or listener behind. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortReason(signal))
    const onAbort = () => {
      clearTimeout(timer)
      reject(abortReason(signal))
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/** Waits only when there is something to wait for: with zero delays the simulator never yields to timers. */
function pause(ms: number, signal: AbortSignal): Promise<void> | null {
  if (ms > 0) return sleep(ms, signal)
  if (signal.aborted) throw abortReason(signal)
  return null
}

function toolCallHeader(call: SimulatedToolCall, index: number): ToolCallDelta {
  return { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }
}

/** The first delta of a choice: the role, plus the first call's header when the answer is tool calls. */
function openingDelta(reply: SimulatedReply): Delta {
  if (reply.kind === 'text' || reply.calls.length === 0) return { role: 'assistant', content: reply.kind === 'text' ? '' : null }
  return { role: 'assistant', content: null, tool_calls: [toolCallHeader(reply.calls[0]!, 0)] }
}

/** The deltas after the opening one, one token each. */
function tokenDeltas(reply: SimulatedReply): Delta[] {
  if (reply.kind === 'text') return reply.pieces.map((piece) => ({ content: piece }))
  const deltas: Delta[] = []
  reply.calls.forEach((call, index) => {
    if (index > 0) deltas.push({ tool_calls: [toolCallHeader(call, index)] })
    for (const fragment of call.fragments) deltas.push({ tool_calls: [{ index, function: { arguments: fragment } }] })
  })
  return deltas
}

/** What `logprobs: true` asks for: how many likeliest tokens to list at each place (`top_logprobs`). */
type LogprobsAsked = { top: number } | null

function logprobsAsked(body: ChatCompletionRequest): LogprobsAsked {
  return body.logprobs === true ? { top: body.top_logprobs ?? 0 } : null
}

// The other tokens listed as likely at a place: 21, so that 20 remain whichever one was chosen.
const alternativeTokens = [' the', ' a', ' and', ' of', ' to', ' in', ' is', ' it', ' that', ' for', ' on', ' with', ' as', ' this', ' at', ' by', ' from', ' be', ' or', '.', ',']
const utf8 = new TextEncoder()

function logprobEntry(token: string, logprob: number): TokenLogprob['top_logprobs'][number] {
  return { token, logprob: Math.round(logprob * 1e6) / 1e6, bytes: Array.from(utf8.encode(token)) }
}

/** The chosen token at `position`, likely but not certain, and below it `top - 1` others, each less likely (the same every time). */
function tokenLogprob(token: string, position: number, top: number): TokenLogprob {
  const hash = stableHash(token, position)
  const chosen = logprobEntry(token, -(hash % 1000) / 2000)
  const others = alternativeTokens.filter((other) => other !== token)
  const listed = [chosen]
  for (let rank = 1; rank < top; rank++) listed.push(logprobEntry(others[(hash + rank) % others.length]!, chosen.logprob - 1 - rank * 0.75))
  return { ...chosen, top_logprobs: top > 0 ? listed : [] }
}

/** The `logprobs` of a whole answer: one entry per content token; none for an answer of tool calls. */
function answerLogprobs(reply: SimulatedReply, asked: LogprobsAsked): ChoiceLogprobs | null {
  if (asked === null) return null
  if (reply.kind !== 'text') return { content: null, refusal: null }
  return { content: reply.pieces.map((piece, position) => tokenLogprob(piece, position, asked.top)), refusal: null }
}

function chunk(envelope: Envelope, index: number, delta: Delta, finishReason: SimulatedReply['finishReason'] | null = null, logprobs: ChoiceLogprobs | null = null): ChatCompletionChunk {
  return {
    id: envelope.id,
    object: 'chat.completion.chunk',
    created: envelope.created,
    model: envelope.model,
    choices: [{ index, delta, logprobs, finish_reason: finishReason }],
  }
}

function completionTokens(replies: readonly SimulatedReply[]): number {
  let tokens = 0
  for (const reply of replies) tokens += reply.tokens
  return tokens
}

function longestReply(replies: readonly SimulatedReply[]): number {
  let longest = 0
  for (const reply of replies) longest = Math.max(longest, reply.kind === 'text' ? reply.pieces.length : reply.tokens)
  return longest
}

function envelopeFor(call: ProviderCall): Envelope {
  return { id: `chatcmpl-${call.requestId}`, created: Math.floor(Date.now() / 1000), model: call.model.id }
}

/**
 * The steps of the replies' stream: after ttftMs each choice's opening chunk and its first token, then
 * one token per choice every interTokenMs, a final chunk per choice with its finish reason, and one
 * usage chunk. A number is a wait of that many milliseconds; with zero delays there is none.
 */
function* streamSteps(replies: SimulatedReply[], envelope: Envelope, promptTokens: number, call: ProviderCall, asked: LogprobsAsked): Generator<ChatCompletionChunk | number, void> {
  const { ttftMs, interTokenMs } = call.deployment.simulator
  if (ttftMs > 0) yield ttftMs
  const deltas = replies.map(tokenDeltas)
  const logprobs = replies.map((reply) => answerLogprobs(reply, asked)?.content ?? null)
  const rounds = Math.max(1, ...deltas.map((list) => list.length))
  for (let index = 0; index < replies.length; index++) yield chunk(envelope, index, openingDelta(replies[index]!))
  for (let round = 0; round < rounds; round++) {
    if (round > 0 && interTokenMs > 0) yield interTokenMs
    for (let index = 0; index < replies.length; index++) {
      const list = deltas[index]!
      // A content token's chunk carries its log probability when they were asked for.
      const tokenLogprobs = logprobs[index]
      if (round < list.length) yield chunk(envelope, index, list[round]!, null, tokenLogprobs ? { content: [tokenLogprobs[round]!], refusal: null } : null)
      if (round === Math.max(1, list.length) - 1) yield chunk(envelope, index, {}, replies[index]!.finishReason)
    }
  }
  yield {
    id: envelope.id,
    object: 'chat.completion.chunk',
    created: envelope.created,
    model: envelope.model,
    choices: [],
    usage: usageOf(promptTokens, completionTokens(replies)),
  }
}

/**
 * A simulated stream: each chunk when its wait is over; `ready()` hands out at once the chunks due
 * without a wait, which the relay then sends together. Stops with the signal's reason once the
 * client has gone.
 */
class SimulatedStream implements AsyncIterableIterator<ChatCompletionChunk>, ChatChunkIterator {
  /** The step looked at by `ready()` and not taken: a wait, or the end. */
  private held: IteratorResult<ChatCompletionChunk | number, void> | null = null

  constructor(
    private readonly steps: Generator<ChatCompletionChunk | number, void>,
    private readonly signal: AbortSignal,
  ) {}

  [Symbol.asyncIterator](): this {
    return this
  }

  async next(): Promise<IteratorResult<ChatCompletionChunk, undefined>> {
    try {
      for (;;) {
        if (this.held?.done) return { done: true, value: undefined }
        if (this.signal.aborted) throw abortReason(this.signal)
        const step = this.held ?? this.steps.next()
        this.held = null
        if (step.done) {
          this.held = step
          return { done: true, value: undefined }
        }
        if (typeof step.value !== 'number') return { done: false, value: step.value }
        await sleep(step.value, this.signal)
      }
    } catch (error) {
      // Like a generator that threw: ended for good.
      await this.return()
      throw error
    }
  }

  ready(): ChatCompletionChunk[] {
    const chunks: ChatCompletionChunk[] = []
    if (this.signal.aborted) return chunks
    while (this.held === null) {
      const step = this.steps.next()
      if (step.done || typeof step.value === 'number') this.held = step
      else chunks.push(step.value)
    }
    return chunks
  }

  async return(): Promise<IteratorResult<ChatCompletionChunk, undefined>> {
    this.steps.return()
    this.held = { done: true, value: undefined }
    return { done: true, value: undefined }
  }
}

function toMessage(reply: SimulatedReply): ChatCompletion['choices'][number]['message'] {
  if (reply.kind === 'text') return { role: 'assistant', content: reply.pieces.join(''), refusal: null }
  return {
    role: 'assistant',
    content: null,
    refusal: null,
    tool_calls: reply.calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.fragments.join('') } })),
  }
}

/**
 * An in-process provider for demos, tests and load tests: deterministic answers derived from the
 * messages, paced by the deployment's ttftMs and interTokenMs, and hashed embeddings.
 */
export class SimulatorProvider implements Provider {
  async chat(body: ChatCompletionRequest, call: ProviderCall): Promise<ChatCompletion> {
    const replies = planReplies(body, call.model, call.requestId)
    const { ttftMs, interTokenMs } = call.deployment.simulator
    await pause(ttftMs + interTokenMs * Math.max(0, longestReply(replies) - 1), call.signal)
    const envelope = envelopeFor(call)
    const promptTokens = estimateChatPromptTokens(body)
    const completion = completionTokens(replies)
    const asked = logprobsAsked(body)
    return {
      id: envelope.id,
      object: 'chat.completion',
      created: envelope.created,
      model: envelope.model,
      choices: replies.map((reply, index) => ({ index, message: toMessage(reply), logprobs: answerLogprobs(reply, asked), finish_reason: reply.finishReason })),
      usage: usageOf(promptTokens, completion),
    }
  }

  async streamChat(body: ChatCompletionRequest, call: ProviderCall): Promise<AsyncIterable<ChatCompletionChunk>> {
    if (call.signal.aborted) throw abortReason(call.signal)
    const replies = planReplies(body, call.model, call.requestId)
    return new SimulatedStream(streamSteps(replies, envelopeFor(call), estimateChatPromptTokens(body), call, logprobsAsked(body)), call.signal)
  }

  async embed(input: EmbeddingInput, dimensions: number | null, call: ProviderCall): Promise<EmbeddingResult> {
    await pause(call.deployment.simulator.ttftMs, call.signal)
    const size = dimensions ?? call.model.embeddingDimensions ?? defaultEmbeddingDimensions
    return { vectors: input.items.map((text) => embedText(text, size)), promptTokens: input.tokens }
  }
}
