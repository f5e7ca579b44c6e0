import { describe, expect, test } from 'bun:test'
import { parse } from 'yaml'
import { extractSchemas } from './extract-openai-schemas'
import { openAIViolations } from './openai-conformance'
import extract from './openai-schemas.json'
import type { WireExchange } from './wire-recorder'

const referenceYaml = Bun.file(new URL('../../../shared/reference/openai-openapi.yaml', import.meta.url).pathname)

function exchange(path: string, status: number, body: unknown, contentType = 'application/json'): WireExchange {
  return {
    method: 'POST',
    path,
    requestHeaders: new Headers(),
    requestBody: null,
    status,
    responseHeaders: new Headers({ 'content-type': contentType }),
    sentAtMs: 0,
    answeredAtMs: 0,
    body: Promise.resolve(typeof body === 'string' ? body : JSON.stringify(body)),
  }
}

const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'nile/qwen2.5-7b-instruct',
  choices: [{ index: 0, message: { role: 'assistant', content: 'The Nile.', refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
}
const chunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'm', choices: [{ index: 0, delta: { content: 'Hi' }, logprobs: null, finish_reason: null }] }
const sse = (...payloads: unknown[]) => payloads.map((payload) => `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`).join('')
const base64Of = (numbers: number[]) => Buffer.from(new Float32Array(numbers).buffer).toString('base64')

describe('openAIViolations', () => {
  test('accepts OpenAI-shaped answers, with extra fields and base64 embeddings', async () => {
    const answers = [
      exchange('/v1/chat/completions', 200, { ...completion, request_id: 'req_1' }),
      exchange('/v1/chat/completions', 200, sse(chunk, { ...chunk, choices: [], usage: completion.usage }, '[DONE]'), 'text/event-stream'),
      exchange('/v1/embeddings', 200, { object: 'list', model: 'm', data: [{ object: 'embedding', index: 0, embedding: base64Of([0.6, 0.8]) }], usage: { prompt_tokens: 1, total_tokens: 1 } }),
      exchange('/v1/models', 200, { object: 'list', data: [{ id: 'm', object: 'model', created: 1, owned_by: 'x', context_window: 8192 }] }),
      exchange('/v1/models/m', 200, { id: 'm', object: 'model', created: 1, owned_by: 'x' }),
      exchange('/v1/models', 401, { error: { type: 'authentication_error', message: 'no', code: 'invalid_api_key', param: null } }),
    ]

    expect(await openAIViolations(answers)).toEqual([])
  })

  test.each([
    ['a completion without choices', exchange('/v1/chat/completions', 200, { ...completion, choices: undefined }), /required property 'choices'/],
    ['an unknown finish_reason', exchange('/v1/chat/completions', 200, { ...completion, choices: [{ ...completion.choices[0], finish_reason: 'done' }] }), /finish_reason: must be equal to one of the allowed values/],
    ['a chunk with a numeric id', exchange('/v1/chat/completions', 200, sse({ ...chunk, id: 1 }, '[DONE]'), 'text/event-stream'), /chunk 0: CreateChatCompletionStreamResponse\/id: must be string/],
    ['a stream without [DONE]', exchange('/v1/chat/completions', 200, sse(chunk), 'text/event-stream'), /does not end with data: \[DONE\]/],
    ['base64 that is no float32s', exchange('/v1/embeddings', 200, { object: 'list', model: 'm', data: [{ object: 'embedding', index: 0, embedding: 'AAAAAAA=' }], usage: { prompt_tokens: 1, total_tokens: 1 } }), /embedding: must be array/],
    ['an error as a string', exchange('/v1/embeddings', 400, { error: 'bad input' }), /ErrorResponse\/error: must be object/],
    ['an error without code', exchange('/v1/embeddings', 400, { error: { type: 'invalid_request_error', message: 'bad', param: null } }), /required property 'code'/],
    ['a route OpenAI does not have', exchange('/v1/completions', 200, {}), /no OpenAI schema for this route/],
  ])('rejects %s', async (_, answer, problem) => {
    const violations = await openAIViolations([answer])

    expect(violations.join('\n')).toMatch(problem)
  })

  test('rejects an empty recording', async () => {
    expect(await openAIViolations([])).toEqual(['the client made no request through the recorder'])
  })
})

test.skipIf(!(await referenceYaml.exists()))('openai-schemas.json is what extract-openai-schemas.ts makes of the reference document', async () => {
  const document = parse(await referenceYaml.text()) as { components: { schemas: Parameters<typeof extractSchemas>[0] } }

  const committed: unknown = extract.components.schemas

  expect<unknown>(extractSchemas(document.components.schemas)).toEqual(committed)
})
