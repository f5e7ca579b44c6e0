import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { nullable } from '@nilegate/shared/schemas/common'
import { formatEgp } from '../core/money'

/** A monthly spend cap in EGP (a decimal string, up to 6 decimals), or null for none. */
export const SpendCapField = nullable(t.String({ pattern: '^\\d{1,12}(\\.\\d{1,6})?$', error: 'must be an EGP amount with up to 6 decimals such as "250" or "99.5", or null' }))

/** A requests-per-minute limit, or null for none. */
export const RpmField = nullable(Type.Integer({ minimum: 1, maximum: 1_000_000_000, error: 'must be a positive integer, or null' }))

/** Converts a field that may be absent (leave as is) or null (clear). */
export function optional<A, B>(value: A | null | undefined, convert: (value: A) => B): B | null | undefined {
  if (value === undefined || value === null) return value as null | undefined
  return convert(value)
}

/** Micro-EGP as the API shows money, or null. */
export function egpOrNull(micros: bigint | null): string | null {
  return micros === null ? null : formatEgp(micros)
}

/** A name without surrounding blanks; 400 when nothing is left. */
export function trimmedName(name: string): string {
  const trimmed = name.trim()
  if (trimmed === '') throw new GatewayError('invalid_request', 'Invalid name: must not be blank.', 'name')
  return trimmed
}
