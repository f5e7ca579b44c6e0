import { Type } from '@sinclair/typebox'
import { t } from 'elysia'

/** The body of POST /v1/embeddings. */
export const EmbeddingsRequest = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256, error: 'model must be a model id from GET /v1/models' }),
    input: t.Union(
      [t.String(), t.Array(t.String()), t.Array(Type.Integer({ minimum: 0 })), t.Array(t.Array(Type.Integer({ minimum: 0 })))],
      { error: 'input must be a string, an array of strings, an array of token ids or an array of arrays of token ids' },
    ),
    encoding_format: t.Optional(t.Union([t.Literal('float'), t.Literal('base64')], { error: "encoding_format must be 'float' or 'base64'" })),
    dimensions: t.Optional(Type.Integer({ minimum: 1, error: 'dimensions must be a positive integer' })),
    user: t.Optional(t.String({ maxLength: 256 })),
  },
  // Fields of other providers (vLLM's truncate_prompt_tokens, say) are accepted, as for chat, and
  // passed to an upstream.
  { additionalProperties: true },
)
export type EmbeddingsRequest = typeof EmbeddingsRequest.static

/** The answer of POST /v1/embeddings; `embedding` is a base64 string of little-endian float32 when asked for. */
export interface EmbeddingsResponse {
  object: 'list'
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>
  model: string
  usage: { prompt_tokens: number; total_tokens: number }
}
