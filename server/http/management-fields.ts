import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { nullable } from '@nilegate/shared/schemas/common'
import type { Page, PageQuery } from '../core/governance/pages'

/** A monthly spend cap in EGP (a decimal string, up to 6 decimals), or null for none. */
export const SpendCapField = nullable(t.String({ pattern: '^\\d{1,12}(\\.\\d{1,6})?$', error: 'must be an EGP amount with up to 6 decimals such as "250" or "99.5", or null' }))

/** A requests-per-minute limit, or null for none. */
export const RpmField = nullable(Type.Integer({ minimum: 1, maximum: 1_000_000_000, error: 'must be a positive integer, or null' }))

/** Converts a field that may be absent (leave as is) or null (clear). */
export function optional<A, B>(value: A | null | undefined, convert: (value: A) => B): B | null | undefined {
  if (value === undefined || value === null) return value as null | undefined
  return convert(value)
}

/** A name without surrounding blanks; 400 when nothing is left. */
export function trimmedName(name: string): string {
  const trimmed = name.trim()
  if (trimmed === '') throw new GatewayError('invalid_request', 'Invalid name: must not be blank.', 'name')
  return trimmed
}

/** The OpenAI list shape of one page. */
export function listObject<T extends { id: string }>(page: Pick<Page<unknown>, 'hasMore'>, data: T[]) {
  const edge = (item: T | undefined): string | null => item?.id ?? null
  return { object: 'list' as const, data, first_id: edge(data[0]), last_id: edge(data.at(-1)), has_more: page.hasMore }
}

/**
 * `after` and `limit` of a list. The limit is checked as text: a coerced integer out of range
 * loses its path in Elysia's error, and the error would not name `limit`.
 */
export const ListQuery = t.Object(
  {
    after: t.Optional(t.String({ minLength: 1 })),
    limit: t.Optional(t.String({ pattern: '^(100|[1-9][0-9]?)$', error: 'must be an integer from 1 to 100' })),
  },
  { additionalProperties: false },
)

export function pageQuery(query: typeof ListQuery.static): PageQuery {
  return { after: query.after, limit: query.limit === undefined ? 20 : Number(query.limit) }
}
