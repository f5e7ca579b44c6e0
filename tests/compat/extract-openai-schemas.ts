/**
 * Copies the response schemas that the compatibility suite validates against out of OpenAI's own
 * OpenAPI document (repository openai/openai-openapi, `openapi.yaml`), together with every component
 * schema they reach through `$ref`, into `openai-schemas.json`. CI runs from a clean clone without
 * the 2.9 MB document, so the extract is committed; re-run this after updating the document:
 *
 *   bun tests/compat/extract-openai-schemas.ts [path/to/openapi.yaml] [commit of that file]
 *
 * Two rewrites keep the extract small and make it mean under JSON Schema 2020-12 what it means to
 * OpenAI: annotations (descriptions, examples, `x-*` extensions) are dropped, and the OpenAPI 3.0
 * `nullable: true` that some schemas still use becomes the 3.1 form, `null` added to `type` and
 * to `enum` (a streamed chunk's `finish_reason` is `null` until the last chunk).
 */
import { parse } from 'yaml'

/** The schemas the suite names; everything they reference comes along. */
export const rootSchemas = [
  'CreateChatCompletionResponse',
  'CreateChatCompletionStreamResponse',
  'CreateEmbeddingResponse',
  'ListModelsResponse',
  'Model',
  'ErrorResponse',
] as const

/** The copy this extract was made from (shared/reference/openai-openapi.yaml beside the repository). */
const knownSource = {
  commit: 'f85dbe223d40e1a31cba812ab2d755c7e98a92a3',
  sha256: 'db5d7478feae10b4d331834c60d9765a8aa042e38419f9b1694288c11aa8ebc8',
}
const refPrefix = '#/components/schemas/'
const annotations = new Set(['description', 'example', 'examples', 'title', 'deprecated', '$comment'])
// Keywords whose value maps names to schemas, rather than being a schema itself.
const schemaMaps = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas'])
// Keywords whose value is data, not schemas: copied as they are.
const dataKeywords = new Set(['enum', 'const', 'default', 'required'])

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type JsonObject = { [key: string]: Json }

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Turns OpenAPI 3.0's `nullable: true` into JSON Schema's `type: [..., "null"]` (and `null` in `enum`). */
function withNullable(schema: JsonObject): JsonObject {
  const { nullable, ...rest } = schema
  if (nullable !== true) return rest
  if (typeof rest.type === 'string') rest.type = [rest.type, 'null']
  else if (Array.isArray(rest.type) && !rest.type.includes('null')) rest.type = [...rest.type, 'null']
  if (Array.isArray(rest.enum) && !rest.enum.includes(null)) rest.enum = [...rest.enum, null]
  return rest
}

/** A schema without annotations, in 3.1 form, with the component names it references added to `refs`. */
function cleanSchema(schema: Json, refs: Set<string>): Json {
  if (Array.isArray(schema)) return schema.map((item) => cleanSchema(item, refs))
  if (!isObject(schema)) return schema
  const cleaned: JsonObject = {}
  for (const [key, value] of Object.entries(withNullable(schema))) {
    if (annotations.has(key) || key.startsWith('x-')) continue
    if (key === '$ref' && typeof value === 'string') {
      if (!value.startsWith(refPrefix)) throw new Error(`unexpected $ref outside components/schemas: ${value}`)
      refs.add(value.slice(refPrefix.length))
      cleaned[key] = value
    } else if (dataKeywords.has(key)) {
      cleaned[key] = value
    } else if (schemaMaps.has(key) && isObject(value)) {
      cleaned[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, cleanSchema(sub, refs)]))
    } else {
      cleaned[key] = cleanSchema(value, refs)
    }
  }
  return cleaned
}

/** The root schemas and their transitive references, cleaned, in name order. */
export function extractSchemas(components: JsonObject): JsonObject {
  const extracted: JsonObject = {}
  const pending: string[] = [...rootSchemas]
  while (pending.length > 0) {
    const name = pending.pop()!
    if (Object.hasOwn(extracted, name)) continue
    const schema = components[name]
    if (schema === undefined) throw new Error(`components/schemas/${name} is not in the document`)
    const refs = new Set<string>()
    extracted[name] = cleanSchema(schema, refs)
    pending.push(...refs)
  }
  return Object.fromEntries(Object.keys(extracted).sort().map((name) => [name, extracted[name]!]))
}

if (import.meta.main) {
  const yamlPath = Bun.argv[2] ?? new URL('../../../shared/reference/openai-openapi.yaml', import.meta.url).pathname
  const text = await Bun.file(yamlPath).text()
  const sha256 = new Bun.CryptoHasher('sha256').update(text).digest('hex')
  const commit = Bun.argv[3] ?? (sha256 === knownSource.sha256 ? knownSource.commit : null)
  if (!commit) throw new Error(`${yamlPath} is not the known copy (sha256 ${sha256}): name its commit as the second argument`)
  const document = parse(text) as { openapi: string; info: { version: string }; components: { schemas: JsonObject } }
  const output = {
    source: {
      repository: 'openai/openai-openapi',
      path: 'openapi.yaml',
      commit,
      sha256,
      openapi: document.openapi,
      info_version: document.info.version,
      extracted_by: 'tests/compat/extract-openai-schemas.ts',
    },
    components: { schemas: extractSchemas(document.components.schemas) },
  }
  const outPath = new URL('./openai-schemas.json', import.meta.url).pathname
  await Bun.write(outPath, `${JSON.stringify(output, null, 2)}\n`)
  console.log(`wrote ${Object.keys(output.components.schemas).length} schemas to ${outPath}`)
}
