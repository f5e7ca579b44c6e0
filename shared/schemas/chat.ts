import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { nullable, Usage } from './common'

/** A text part of a message's content. */
export const TextPart = t.Object({ type: t.Literal('text'), text: t.String() })
/** An image, by URL or as a data URL. */
export const ImageUrlPart = t.Object({
  type: t.Literal('image_url'),
  image_url: t.Object({ url: t.String(), detail: t.Optional(t.Union([t.Literal('auto'), t.Literal('low'), t.Literal('high')])) }),
})
/** Base64 audio. */
export const InputAudioPart = t.Object({
  type: t.Literal('input_audio'),
  input_audio: t.Object({ data: t.String(), format: t.Union([t.Literal('wav'), t.Literal('mp3')]) }),
})
/** A file, inline as base64 or by id. */
export const FilePart = t.Object({
  type: t.Literal('file'),
  file: t.Object({ filename: t.Optional(t.String()), file_data: t.Optional(t.String()), file_id: t.Optional(t.String()) }),
})
/** A refusal part of an earlier assistant reply. */
export const RefusalPart = t.Object({ type: t.Literal('refusal'), refusal: t.String() })
/** Any content part. */
export const ContentPart = t.Union([TextPart, ImageUrlPart, InputAudioPart, FilePart, RefusalPart])
export type ContentPart = typeof ContentPart.static

/** A tool call made by the assistant. */
export const ToolCall = t.Object({
  id: t.String(),
  type: t.Literal('function'),
  function: t.Object({ name: t.String(), arguments: t.String() }),
})
export type ToolCall = typeof ToolCall.static

const name = t.Optional(t.String())
const textContent = t.Union([t.String(), t.Array(TextPart, { minItems: 1 })])

/** A system or developer instruction. */
export const SystemMessage = t.Object({ role: t.Union([t.Literal('system'), t.Literal('developer')]), content: textContent, name })
/** The human input. */
export const UserMessage = t.Object({
  role: t.Literal('user'),
  content: t.Union([t.String(), t.Array(t.Union([TextPart, ImageUrlPart, InputAudioPart, FilePart]), { minItems: 1 })]),
  name,
})
/** An earlier model reply; content may be null when it carries tool calls. */
export const AssistantMessage = t.Object({
  role: t.Literal('assistant'),
  content: t.Optional(t.Union([t.String(), t.Array(t.Union([TextPart, RefusalPart])), t.Null()])),
  name,
  refusal: t.Optional(t.Union([t.String(), t.Null()])),
  tool_calls: t.Optional(t.Array(ToolCall)),
})
/** The result of a tool call. */
export const ToolMessage = t.Object({ role: t.Literal('tool'), content: textContent, tool_call_id: t.String() })
/** One message of a conversation. */
export const ChatMessage = t.Union([SystemMessage, UserMessage, AssistantMessage, ToolMessage])
export type ChatMessage = typeof ChatMessage.static

/** A function the model may call. */
export const Tool = t.Object({
  type: t.Literal('function'),
  function: t.Object({
    name: t.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$', error: 'tool names are 1-64 characters of a-z, A-Z, 0-9, _ and -' }),
    description: t.Optional(t.String()),
    parameters: t.Optional(t.Record(t.String(), t.Unknown())),
    strict: nullable(t.Boolean()),
  }),
})

/** How the model may use tools. */
export const ToolChoice = t.Union([
  t.Literal('none'),
  t.Literal('auto'),
  t.Literal('required'),
  t.Object({ type: t.Literal('function'), function: t.Object({ name: t.String() }) }),
])

/** The body of POST /v1/chat/completions. Unknown fields are accepted and passed to the upstream. */
export const ChatCompletionRequest = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256, error: 'model must be a model id from GET /v1/models' }),
    messages: t.Array(ChatMessage, { minItems: 1, error: 'messages must be a non-empty array of messages' }),
    temperature: nullable(t.Number({ minimum: 0, maximum: 2, error: 'temperature must be a number from 0 to 2' })),
    top_p: nullable(t.Number({ minimum: 0, maximum: 1, error: 'top_p must be a number from 0 to 1' })),
    n: nullable(Type.Integer({ minimum: 1, maximum: 128, error: 'n must be an integer from 1 to 128' })),
    max_tokens: nullable(Type.Integer({ minimum: 1, error: 'max_tokens must be a positive integer' })),
    max_completion_tokens: nullable(Type.Integer({ minimum: 1, error: 'max_completion_tokens must be a positive integer' })),
    stream: nullable(t.Boolean({ error: 'stream must be a boolean' })),
    stream_options: nullable(
      t.Object({ include_usage: t.Optional(t.Boolean()), include_obfuscation: t.Optional(t.Boolean()) }, { error: 'stream_options must be an object like {"include_usage": true}' }),
    ),
    stop: nullable(
      t.Union([t.String(), t.Array(t.String(), { minItems: 1, maxItems: 4 })], { error: 'stop must be a string or an array of 1 to 4 strings' }),
    ),
    frequency_penalty: nullable(t.Number({ minimum: -2, maximum: 2, error: 'frequency_penalty must be a number from -2 to 2' })),
    presence_penalty: nullable(t.Number({ minimum: -2, maximum: 2, error: 'presence_penalty must be a number from -2 to 2' })),
    logit_bias: nullable(
      t.Record(t.String({ pattern: '^[0-9]+$' }), t.Number({ minimum: -100, maximum: 100 }), { additionalProperties: false, error: 'logit_bias maps token ids to numbers from -100 to 100' }),
    ),
    logprobs: nullable(t.Boolean({ error: 'logprobs must be a boolean' })),
    top_logprobs: nullable(Type.Integer({ minimum: 0, maximum: 20, error: 'top_logprobs must be an integer from 0 to 20' })),
    seed: nullable(Type.Integer({ error: 'seed must be an integer' })),
    response_format: t.Optional(
      t.Union(
        [
          t.Object({ type: t.Literal('text') }),
          t.Object({ type: t.Literal('json_object') }),
          t.Object({
            type: t.Literal('json_schema'),
            json_schema: t.Object({
              name: t.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
              description: t.Optional(t.String()),
              schema: t.Optional(t.Record(t.String(), t.Unknown())),
              strict: nullable(t.Boolean()),
            }),
          }),
        ],
        { error: 'response_format must be {"type":"text"}, {"type":"json_object"} or {"type":"json_schema","json_schema":{...}}' },
      ),
    ),
    tools: t.Optional(t.Array(Tool, { maxItems: 128, error: 'tools must be an array of at most 128 function tools' })),
    tool_choice: t.Optional(ToolChoice),
    parallel_tool_calls: t.Optional(t.Boolean({ error: 'parallel_tool_calls must be a boolean' })),
    user: t.Optional(t.String({ maxLength: 256, error: 'user must be a string of at most 256 characters' })),
    metadata: nullable(t.Record(t.String({ maxLength: 64 }), t.String({ maxLength: 512 }), { maxProperties: 16, error: 'metadata holds at most 16 string pairs' })),
  },
  { additionalProperties: true },
)
export type ChatCompletionRequest = typeof ChatCompletionRequest.static

/** Why generation ended. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call'

/** One token's log probability (`logprobs: true`): its UTF-8 bytes, and the likeliest tokens at its place (`top_logprobs`). */
export interface TokenLogprob {
  token: string
  logprob: number
  bytes: number[] | null
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] | null }>
}

/** The log probabilities of a choice's content (or refusal) tokens; null content for an answer of tool calls. */
export interface ChoiceLogprobs {
  content: TokenLogprob[] | null
  refusal: TokenLogprob[] | null
}

/** A chat completion (non-streamed answer). */
export interface ChatCompletion {
  id: string
  object: 'chat.completion'
  created: number
  model: string
  choices: Array<{
    index: number
    message: { role: 'assistant'; content: string | null; refusal: string | null; tool_calls?: ToolCall[] }
    logprobs: ChoiceLogprobs | null
    finish_reason: FinishReason
  }>
  usage: Usage
  system_fingerprint?: string | null
}

/** A tool call fragment in a stream. */
export interface ToolCallDelta {
  index: number
  id?: string
  type?: 'function'
  function?: { name?: string; arguments?: string }
}

/** One chunk of a streamed chat completion. */
export interface ChatCompletionChunk {
  id: string
  object: 'chat.completion.chunk'
  created: number
  model: string
  choices: Array<{
    index: number
    delta: { role?: 'assistant'; content?: string | null; refusal?: string | null; tool_calls?: ToolCallDelta[] }
    logprobs: ChoiceLogprobs | null
    finish_reason: FinishReason | null
  }>
  usage?: Usage | null
  system_fingerprint?: string | null
}
