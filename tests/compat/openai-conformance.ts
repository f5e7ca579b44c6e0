import { schemaErrors, type OpenAISchemaName } from './openai-schemas'
import type { WireExchange } from './wire-recorder'

/** The `data:` payloads of a server-sent event stream, in order (multi-line data joined by newlines). */
export function sseData(text: string): string[] {
  const payloads: string[] = []
  for (const event of text.split(/\r?\n\r?\n/)) {
    const lines = event.split(/\r?\n/).filter((line) => line.startsWith('data:'))
    if (lines.length > 0) payloads.push(lines.map((line) => line.slice(line.startsWith('data: ') ? 6 : 5)).join('\n'))
  }
  return payloads
}

/**
 * OpenAI's schema types `embedding` as numbers only, while its API answers the base64 string that
 * SDKs ask for by default (a gap of the spec, not of the API): decode it as little-endian float32s
 * and validate the numbers, so a string of the wrong length fails too.
 */
function withDecodedEmbeddings(body: unknown): unknown {
  const data = (body as { data?: unknown }).data
  if (!Array.isArray(data)) return body
  return {
    ...(body as object),
    data: data.map((item: { embedding?: unknown }) => {
      if (typeof item?.embedding !== 'string') return item
      const bytes = Buffer.from(item.embedding, 'base64')
      if (bytes.length % 4 !== 0) return { ...item, embedding: `${bytes.length} bytes of base64, not float32s` }
      return { ...item, embedding: Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4)) }
    }),
  }
}

function parsed(text: string, where: string): { value: unknown } | { problem: string } {
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return { problem: `${where}: not JSON: ${text.slice(0, 200)}` }
  }
}

function jsonViolations(name: OpenAISchemaName, text: string, where: string, prepare: (body: unknown) => unknown = (body) => body): string[] {
  const body = parsed(text, where)
  if ('problem' in body) return [body.problem]
  return schemaErrors(name, prepare(body.value)).map((error) => `${where}: ${error}`)
}

/** Every chunk of a chat stream must be a `CreateChatCompletionStreamResponse`, and `[DONE]` must end it. */
function streamViolations(text: string, where: string): string[] {
  const payloads = sseData(text)
  if (payloads.at(-1) !== '[DONE]') return [`${where}: the stream does not end with data: [DONE]`]
  const chunks = payloads.slice(0, -1)
  if (chunks.length === 0) return [`${where}: the stream has no chunk`]
  return chunks.flatMap((chunk, index) => jsonViolations('CreateChatCompletionStreamResponse', chunk, `${where} chunk ${index}`))
}

/** How an exchange's answer must look to an OpenAI client, by route and status; null for a route OpenAI does not have. */
function answerViolations(exchange: WireExchange, text: string): string[] | null {
  const where = `${exchange.method} ${exchange.path} (${exchange.status})`
  const route = exchange.path.replace(/^\/v1/, '')
  if (exchange.status >= 400) return jsonViolations('ErrorResponse', text, where)
  if (route === '/models') return jsonViolations('ListModelsResponse', text, where)
  if (route.startsWith('/models/')) return jsonViolations('Model', text, where)
  if (route === '/embeddings') return jsonViolations('CreateEmbeddingResponse', text, where, withDecodedEmbeddings)
  if (route !== '/chat/completions') return null
  const isStream = exchange.responseHeaders.get('content-type')?.startsWith('text/event-stream') ?? false
  return isStream ? streamViolations(text, where) : jsonViolations('CreateChatCompletionResponse', text, where)
}

/**
 * Validates every answer a client received against OpenAI's own schemas (extra fields allowed):
 * one line per problem, empty when all conform. Fails when nothing was recorded, so a test whose
 * client bypassed the recorder cannot pass by validating nothing.
 */
export async function openAIViolations(exchanges: readonly WireExchange[]): Promise<string[]> {
  if (exchanges.length === 0) return ['the client made no request through the recorder']
  const violations: string[] = []
  for (const exchange of exchanges) {
    const found = answerViolations(exchange, await exchange.body)
    violations.push(...(found ?? [`${exchange.method} ${exchange.path}: no OpenAI schema for this route`]))
  }
  return violations
}
