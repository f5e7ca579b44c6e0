import { GatewayError } from '@nilegate/shared/errors'

/** Most values one list parameter may carry. */
const maxListValues = 100

/**
 * The values of a list query parameter in either form clients send: `name[]=a&name[]=b` (OpenAI's
 * SDKs) or `name=a&name=b`; null when absent.
 */
export function queryList(params: URLSearchParams, name: string): string[] | null {
  const values = [...params.getAll(name), ...params.getAll(`${name}[]`)].flatMap((value) => value.split(',')).map((value) => value.trim()).filter(Boolean)
  if (values.length === 0) return null
  if (values.length > maxListValues) throw new GatewayError('invalid_request', `At most ${maxListValues} values of ${name} are allowed.`, name)
  return [...new Set(values)]
}

/** An integer query parameter within bounds, or `fallback` when absent. */
export function queryInteger(params: URLSearchParams, name: string, bounds: { min: number; max: number }, fallback: number): number
export function queryInteger(params: URLSearchParams, name: string, bounds: { min: number; max: number }, fallback?: null): number | null
export function queryInteger(params: URLSearchParams, name: string, bounds: { min: number; max: number }, fallback: number | null = null): number | null {
  const raw = params.get(name)
  if (raw === null || raw === '') return fallback
  if (!/^-?\d{1,16}$/.test(raw) || Number(raw) < bounds.min || Number(raw) > bounds.max) {
    throw new GatewayError('invalid_request', `${name} must be an integer from ${bounds.min} to ${bounds.max}.`, name)
  }
  return Number(raw)
}
