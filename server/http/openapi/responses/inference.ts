import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { ToolCall } from '@nilegate/shared/schemas/chat'
import { Usage } from '@nilegate/shared/schemas/common'
import { orNull } from './fields'

/** Why generation ended. */
export const FinishReason = t.Union([t.Literal('stop'), t.Literal('length'), t.Literal('tool_calls'), t.Literal('content_filter'), t.Literal('function_call')])

const tokenFields = { token: t.String(), logprob: t.Number({ description: 'Natural log of the probability; 0 or less.' }), bytes: orNull(t.Array(Type.Integer({ minimum: 0, maximum: 255 }))) }
/** One token's log probability, and the likeliest tokens at its place. */
const TokenLogprob = t.Object({ ...tokenFields, top_logprobs: t.Array(t.Object(tokenFields)) })
/** With `logprobs: true`, the log probabilities of a choice's tokens (content null for tool calls); null otherwise. */
const ChoiceLogprobs = orNull(t.Object({ content: orNull(t.Array(TokenLogprob)), refusal: orNull(t.Array(TokenLogprob)) }))

/** The answer of POST /v1/chat/completions without `stream`. */
export const ChatCompletion = t.Object({
  id: t.String(),
  object: t.Literal('chat.completion'),
  created: Type.Integer({ description: 'Unix seconds.' }),
  model: t.String(),
  choices: t.Array(
    t.Object({
      index: Type.Integer(),
      message: t.Object({ role: t.Literal('assistant'), content: orNull(t.String()), refusal: orNull(t.String()), tool_calls: t.Optional(t.Array(ToolCall)) }),
      logprobs: ChoiceLogprobs,
      finish_reason: FinishReason,
    }),
  ),
  usage: Usage,
  system_fingerprint: t.Optional(orNull(t.String())),
})

/** A fragment of a tool call in a stream; fragments with the same index make one call. */
export const ToolCallDelta = t.Object({
  index: Type.Integer(),
  id: t.Optional(t.String()),
  type: t.Optional(t.Literal('function')),
  function: t.Optional(t.Object({ name: t.Optional(t.String()), arguments: t.Optional(t.String()) })),
})

/**
 * One server-sent event of POST /v1/chat/completions with `stream: true`. With
 * `stream_options.include_usage`, the last chunk has no choices and carries the usage.
 */
export const ChatCompletionChunk = t.Object({
  id: t.String(),
  object: t.Literal('chat.completion.chunk'),
  created: Type.Integer({ description: 'Unix seconds.' }),
  model: t.String(),
  choices: t.Array(
    t.Object({
      index: Type.Integer(),
      delta: t.Object({
        role: t.Optional(t.Literal('assistant')),
        content: t.Optional(orNull(t.String())),
        refusal: t.Optional(orNull(t.String())),
        tool_calls: t.Optional(t.Array(ToolCallDelta)),
      }),
      logprobs: ChoiceLogprobs,
      finish_reason: orNull(FinishReason),
    }),
  ),
  usage: t.Optional(orNull(Usage)),
  system_fingerprint: t.Optional(orNull(t.String())),
})

/** The answer of POST /v1/embeddings. */
export const EmbeddingsResponse = t.Object({
  object: t.Literal('list'),
  data: t.Array(
    t.Object({
      object: t.Literal('embedding'),
      index: Type.Integer(),
      embedding: t.Union([t.Array(t.Number()), t.String({ description: "Little-endian float32 values in base64, when `encoding_format` is 'base64'." })]),
    }),
  ),
  model: t.String(),
  usage: t.Object({ prompt_tokens: Type.Integer(), total_tokens: Type.Integer() }),
})

/** A catalog model: the OpenAI model shape plus the catalog's attributes. */
export const Model = t.Object({
  id: t.String({ description: "The model id; it may contain '/'." }),
  object: t.Literal('model'),
  created: Type.Integer({ description: 'Unix seconds.' }),
  owned_by: t.String(),
  status: t.Union([t.Literal('Live'), t.Literal('Retired')]),
  modality: t.Union([t.Literal('Chat'), t.Literal('Embeddings')]),
  context_window: Type.Integer({ description: 'Tokens.' }),
  context_window_label: t.String({ description: 'The context window rounded to thousands, as the catalog shows it ("128K").' }),
  max_output_tokens: Type.Integer(),
  region: t.String(),
  weights: t.String(),
  published: t.String({ description: 'Publication date, as "12 Mar 2025".' }),
  input_price_egp_per_1m: t.String({ description: 'EGP per 1,000,000 input tokens, as a decimal string.' }),
  output_price_egp_per_1m: t.String({ description: 'EGP per 1,000,000 output tokens, as a decimal string.' }),
  monthly_cost_example_egp: t.String({ description: 'Estimated EGP for 50M input plus 15M output tokens a month at these prices.' }),
  prices_are_samples: t.Boolean({ description: 'True when the prices are illustrative samples rather than a price list.' }),
  embedding_dimensions: t.Optional(Type.Integer()),
  shutdown_date: orNull(t.String({ description: 'The retirement date, YYYY-MM-DD.' })),
  replacement: t.Optional(orNull(t.String())),
})

/** The answer of GET /v1/models. */
export const ModelList = t.Object({ object: t.Literal('list'), data: t.Array(Model) })

/** A model retirement, scheduled or done. */
export const ModelRetirement = t.Object({
  object: t.Literal('model.retirement'),
  model: t.String(),
  modality: t.Union([t.Literal('chat'), t.Literal('embeddings')]),
  status: t.Union([t.Literal('retired'), t.Literal('scheduled')]),
  retires_on: orNull(t.String({ description: 'YYYY-MM-DD.' })),
  replacement: orNull(t.String()),
})

/** The answer of GET /v1/changelog, newest date first. */
export const Changelog = t.Object({ object: t.Literal('list'), data: t.Array(ModelRetirement) })
