/**
 * Builds the JSON arguments of a simulated tool call from the function's JSON Schema (and the
 * answers of the `json_schema` response format from theirs): every declared property gets a
 * plausible value of its type, enums and consts are honoured, local $refs resolved.
 */

type Schema = Record<string, unknown>

const maxDepth = 5
const cities = ['Cairo', 'Alexandria', 'Aswan', 'Luxor', 'Giza']
const words = ['example', 'nile', 'delta', 'papyrus', 'sample']

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function pick<T>(items: readonly T[], random: () => number): T {
  return items[random() % items.length]!
}

function resolveRef(schema: Schema, root: Schema): Schema {
  const ref = schema.$ref
  if (ref === '#') return root
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return schema
  let target: unknown = root
  for (const segment of ref.slice(2).split('/')) target = isSchema(target) ? target[segment] : undefined
  return isSchema(target) ? target : {}
}

function schemaType(schema: Schema): string | undefined {
  const type = schema.type
  if (typeof type === 'string') return type
  if (Array.isArray(type)) return type.find((candidate): candidate is string => typeof candidate === 'string' && candidate !== 'null')
  if (isSchema(schema.properties)) return 'object'
  if (schema.items !== undefined) return 'array'
  return undefined
}

function sampleString(schema: Schema, name: string, random: () => number): string {
  switch (schema.format) {
    case 'date':
      return '2025-01-15'
    case 'date-time':
      return '2025-01-15T12:00:00Z'
    case 'email':
      return 'user@example.com'
    case 'uri':
    case 'url':
      return 'https://example.com/'
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000'
  }
  const lower = name.toLowerCase()
  if (lower.includes('city') || lower.includes('location') || lower.includes('place')) return pick(cities, random)
  return pick(words, random)
}

function sampleNumber(schema: Schema, random: () => number, integer: boolean): number {
  const minimum = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : 1
  const maximum = typeof schema.maximum === 'number' ? schema.maximum : typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : minimum + 9
  const low = Math.ceil(minimum)
  const span = Math.max(0, Math.floor(maximum) - low)
  const value = low + (random() % (span + 1))
  return integer || span === 0 ? value : Math.min(maximum, value + 0.5)
}

function sampleValue(input: unknown, root: Schema, random: () => number, depth: number, name: string): unknown {
  if (!isSchema(input)) return null
  const schema = resolveRef(input, root)
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return pick(schema.enum, random)
  if ('default' in schema) return schema.default
  const variants = schema.anyOf ?? schema.oneOf ?? schema.allOf
  if (Array.isArray(variants) && variants.length > 0) {
    const concrete = variants.find((variant) => isSchema(variant) && variant.type !== 'null') ?? variants[0]
    return sampleValue(concrete, root, random, depth, name)
  }
  switch (schemaType(schema)) {
    case 'object': {
      const value: Record<string, unknown> = {}
      if (depth >= maxDepth || !isSchema(schema.properties)) return value
      for (const [key, property] of Object.entries(schema.properties)) value[key] = sampleValue(property, root, random, depth + 1, key)
      return value
    }
    case 'array': {
      if (depth >= maxDepth) return []
      const count = Math.min(3, Math.max(1, typeof schema.minItems === 'number' ? schema.minItems : 1))
      return Array.from({ length: count }, () => sampleValue(schema.items, root, random, depth + 1, name))
    }
    case 'string':
      return sampleString(schema, name, random)
    case 'integer':
      return sampleNumber(schema, random, true)
    case 'number':
      return sampleNumber(schema, random, false)
    case 'boolean':
      return (random() & 1) === 1
    case 'null':
      return null
    default:
      return pick(words, random)
  }
}

/**
 * A JSON object that fits `schema` (an object schema; none gives `{}`): the arguments of a call to
 * a function with these `parameters`, or an answer in a `json_schema` response format.
 */
export function toolArguments(schema: Record<string, unknown> | undefined, random: () => number): string {
  const root = schema ?? { type: 'object', properties: {} }
  const value = sampleValue(root, root, random, 0, '')
  return JSON.stringify(isSchema(value) ? value : {})
}
