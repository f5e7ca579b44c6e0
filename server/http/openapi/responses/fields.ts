import { Type } from '@sinclair/typebox'
import { t, type TSchema } from 'elysia'

/** A field that is always present and may be null. */
export const orNull = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()])

/** A point in time as Unix seconds. */
export const unixSeconds = (description = 'Unix seconds.') => Type.Integer({ description })

/** Money as the API shows it: EGP as a decimal string with 6 decimals. */
export const egp = (description: string) => t.String({ pattern: '^-?\\d+\\.\\d{6}$', description, examples: ['12.345678'] })

/**
 * A string that is one of `values` at run time, typed as a plain string: for fields that the routes
 * build without narrowing their type, so that the schema's static type stays the route's.
 */
export const oneOfStrings = (values: readonly string[], description?: string) => t.String({ enum: [...values], description })

/** A page of the OpenAI list shape, `after` and `limit` in the query. */
export const listOf = <T extends TSchema>(item: T) =>
  t.Object({
    object: t.Literal('list'),
    data: t.Array(item),
    first_id: orNull(t.String()),
    last_id: orNull(t.String()),
    has_more: t.Boolean(),
  })

/** The answer of a DELETE. */
export const deletedObject = <T extends string>(object: T) => t.Object({ object: t.Literal(object), id: t.String(), deleted: t.Boolean() })
