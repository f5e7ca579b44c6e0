import { GatewayError } from '@nilegate/shared/errors'

/**
 * Whether Postgres can hold `text`: a text or jsonb value cannot contain U+0000, and a string with
 * an unpaired surrogate has no UTF-8 form (jsonb refuses its `\ud800` escape).
 */
export function isStorable(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed()
}

/**
 * Where in `value` the first string (or object key) Postgres cannot hold is, as a `param`
 * (`members[0].email`); `at` names `value` itself. Null when every string can be stored.
 */
export function firstUnstorable(value: unknown, at: string): string | null {
  if (typeof value === 'string') return isStorable(value) ? null : at
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = firstUnstorable(value[index], `${at}[${index}]`)
      if (found !== null) return found
    }
    return null
  }
  if (value === null || typeof value !== 'object') return null
  for (const [key, item] of Object.entries(value)) {
    const where = at === '' ? key : `${at}.${key}`
    if (!isStorable(key)) return where
    const found = firstUnstorable(item, where)
    if (found !== null) return found
  }
  return null
}

/**
 * A beforeHandle hook for the routes that write what they are sent to the database: 400
 * invalid_request naming the path parameter, query parameter or body field whose text Postgres
 * cannot hold, instead of the database's error. Runs after authentication and schema validation,
 * so those answers keep their precedence.
 */
export function refuseUnstorableText({ params, query, body }: { params?: unknown; query?: unknown; body?: unknown }): void {
  const param = firstUnstorable(params, '') ?? firstUnstorable(query, '') ?? firstUnstorable(body, '')
  if (param === null) return
  throw new GatewayError('invalid_request', `Invalid ${param}: it contains U+0000 or an unpaired UTF-16 surrogate, which cannot be stored; remove the character.`, param)
}
