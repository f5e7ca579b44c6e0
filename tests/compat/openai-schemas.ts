import Ajv2020 from 'ajv/dist/2020'
import extract from './openai-schemas.json'
import type { rootSchemas } from './extract-openai-schemas'

/** A response schema of OpenAI's API that the suite validates against. */
export type OpenAISchemaName = (typeof rootSchemas)[number]

const documentId = 'openai-openapi'

// Formats (`unixtime`, `float`, ...) are OpenAI's annotations, not JSON Schema's; extra properties
// stay allowed, as in OpenAI's schemas themselves, so the catalog's own fields pass.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
ajv.addSchema(extract, documentId)

/** What is wrong with `body` as an OpenAI `name`, one line per error; empty when it conforms. */
export function schemaErrors(name: OpenAISchemaName, body: unknown): string[] {
  const validate = ajv.getSchema(`${documentId}#/components/schemas/${name}`)
  if (!validate) throw new Error(`${name} is not in openai-schemas.json: re-run extract-openai-schemas.ts`)
  if (validate(body)) return []
  return (validate.errors ?? []).map((error) => `${name}${error.instancePath || ''}: ${error.message ?? error.keyword} ${JSON.stringify(error.params)}`)
}
