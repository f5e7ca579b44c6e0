import { Kind, type TSchema } from '@sinclair/typebox'

/** A JSON Schema (2020-12) as an OpenAPI 3.1 document holds it. */
export type JsonSchema = { [keyword: string]: unknown }

/** Keywords whose values are data rather than schemas. */
const dataKeywords = new Set(['const', 'default', 'enum', 'examples', 'example'])
/** Keywords whose values map names to schemas. */
const schemaMaps = new Set(['properties', 'patternProperties', '$defs'])

/** Whether a value is a TypeBox schema. */
export function isSchema(value: unknown): value is TSchema {
  return typeof value === 'object' && value !== null && Kind in value
}

function isStringConst(value: unknown): value is { const: string; type: 'string' } {
  if (typeof value !== 'object' || value === null) return false
  const { const: constant, type, ...rest } = value as Record<string, unknown>
  return typeof constant === 'string' && type === 'string' && Object.keys(rest).length === 0
}

/**
 * Turns the TypeBox schemas of the routes into the document's schemas. TypeBox schemas are JSON
 * Schema already; what differs: Elysia's `error` messages (kept as descriptions), the `default`
 * Elysia puts on union enums for its error messages (dropped: no route means it as a default), and
 * unions of string literals (written as `enum`, which client generators turn into enums). Schemas
 * given a name become components, referenced wherever they occur, so that generated clients get
 * one type for each.
 */
export class SchemaComponents {
  private readonly names = new Map<TSchema, string>()
  private readonly named = new Set<string>()
  readonly schemas: Record<string, JsonSchema> = {}

  /** Names each TypeBox schema a module exports after its export, the convention of `shared/schemas`. */
  nameExports(module: Record<string, unknown>): void {
    for (const [name, value] of Object.entries(module)) if (isSchema(value)) this.name(value, name)
  }

  private name(schema: TSchema, name: string): void {
    if (this.names.has(schema)) return
    if (this.named.has(name)) throw new Error(`Two schemas are named ${name}.`)
    this.names.set(schema, name)
    this.named.add(name)
  }

  /** A reference to `schema` when it has a name, else its JSON schema. */
  use(schema: TSchema): JsonSchema {
    const name = this.names.get(schema)
    if (name === undefined) return this.convert(schema) as JsonSchema
    if (!(name in this.schemas)) {
      // Claimed before converting, so that a schema that contains itself refers to itself.
      this.schemas[name] = {}
      this.schemas[name] = this.convert(schema, { root: true }) as JsonSchema
    }
    return { $ref: `#/components/schemas/${name}` }
  }

  private convert(node: unknown, context: { root?: boolean; parentError?: string } = {}): unknown {
    if (Array.isArray(node)) return node.map((item) => this.convert(item, { parentError: context.parentError }))
    if (typeof node !== 'object' || node === null) return node
    if (!context.root && isSchema(node) && this.names.has(node)) return this.use(node)
    const source = node as Record<string, unknown>
    const error = typeof source.error === 'string' ? source.error : undefined
    const out: JsonSchema = {}
    for (const [key, value] of Object.entries(source)) {
      if (key === '$id' || (key === 'error' && error !== undefined)) continue
      if (dataKeywords.has(key)) out[key] = value
      else if (schemaMaps.has(key) && typeof value === 'object' && value !== null) {
        out[key] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, this.convert(schema)]))
      } else out[key] = this.convert(value, { parentError: error })
    }
    if (error !== undefined && error !== context.parentError && out.description === undefined) out.description = error
    if (Array.isArray(out.anyOf) && out.anyOf.length > 0 && out.anyOf.every(isStringConst)) {
      const { anyOf, ...rest } = out
      return { ...rest, type: 'string', enum: (anyOf as Array<{ const: string }>).map((member) => member.const) }
    }
    return out
  }
}
