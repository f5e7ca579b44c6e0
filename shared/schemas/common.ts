import { Type, type SchemaOptions, type TLiteral, type TUnion } from '@sinclair/typebox'
import { t, type TSchema } from 'elysia'

/** A field that clients may also send as JSON null (the OpenAI SDKs do). */
export const nullable = <T extends TSchema>(schema: T) => t.Optional(t.Union([schema, t.Null()], { error: schema.error }))

/**
 * One of a fixed list of strings, typed as their union. Not `t.UnionEnum`: Elysia fills a missing
 * UnionEnum field with its first value, so a forgotten field would silently get one.
 */
export function literalUnion<const T extends readonly [string, ...string[]]>(values: T, options?: SchemaOptions): TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }> {
  return Type.Union(values.map((value) => Type.Literal(value)), options) as never
}

/** Token counts of one request. */
export const Usage = t.Object({
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
})
export type Usage = typeof Usage.static

/** The usage of a request from its prompt and completion token counts. */
export function usageOf(promptTokens: number, completionTokens: number): Usage {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens }
}
