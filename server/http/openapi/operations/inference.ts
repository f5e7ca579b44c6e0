import { t } from 'elysia'
import type { Operation } from '../operation'
import { ChatCompletion, ChatCompletionChunk, Changelog, EmbeddingsResponse, Model, ModelList } from '../responses/inference'

const modelErrors = ['model_not_found', 'model_sunset', 'model_not_available', 'model_not_enabled_for_project', 'model_not_supported_on_endpoint'] as const
const admissionErrors = ['rate_limit_exceeded', 'quota_exceeded', 'insufficient_balance', 'spending_cap_reached', 'project_spend_cap_exceeded'] as const
const upstreamErrors = ['no_healthy_backends', 'engine_unavailable', 'service_unavailable'] as const

/** The inference API (API keys), the public changelog and this document. */
export const inferenceOperations = {
  'GET /v1/models': {
    operationId: 'listModels',
    summary: 'List the models this key may call',
    description: 'The live models of the catalog that the key\'s organization and project allow. Needs the `models.read` scope.',
    tag: 'Models',
    access: 'apiKey',
    response: ModelList,
  },
  'GET /v1/models/*': {
    operationId: 'retrieveModel',
    summary: 'Retrieve a model',
    description: 'Retired models answer 403 `model_sunset` naming their replacement. Needs the `models.read` scope.',
    tag: 'Models',
    access: 'apiKey',
    path: '/v1/models/{model}',
    params: { model: "The model id. Ids contain '/', which may be sent raw or percent-encoded as %2F." },
    response: Model,
    errors: ['invalid_request', 'not_found', 'model_sunset', 'model_not_available', 'model_not_enabled_for_project'],
  },
  'POST /v1/chat/completions': {
    operationId: 'createChatCompletion',
    summary: 'Create a chat completion',
    description:
      'Answers with a `chat.completion`, or with `stream: true` a stream of server-sent events, each `data: <ChatCompletionChunk>`, ending with `data: [DONE]`; ' +
      'an error after the stream started arrives as a `data: {"error": ...}` event before it. The worst-case cost (prompt plus `max_tokens`, times `n`) is held ' +
      'against the balance and the monthly caps until the request ends, then the actual cost is charged. Unknown fields are passed to the upstream. ' +
      'Needs the `chat.completions` scope.',
    tag: 'Chat',
    access: 'apiKey',
    response: ChatCompletion,
    events: ChatCompletionChunk,
    errors: ['invalid_role', 'missing_content', 'content_limit_exceeded', 'max_tokens_exceeded', ...modelErrors, ...admissionErrors, ...upstreamErrors],
    example: {
      model: 'nile/qwen2.5-7b-instruct',
      messages: [
        { role: 'system', content: 'Answer in one sentence.' },
        { role: 'user', content: 'What is the longest river in Africa?' },
      ],
      max_tokens: 64,
    },
  },
  'POST /v1/playground/chat/completions': {
    operationId: 'createPlaygroundChatCompletion',
    summary: "Try a model from the dashboard's playground",
    description:
      'The chat completion of `POST /v1/chat/completions` (JSON or a stream), made with a session instead of an API key by a verified member of the ' +
      'organization (not a reader); billed, limited and recorded like a key of the project named by the `OpenAI-Project` header, which is required.',
    tag: 'Chat',
    access: 'member',
    response: ChatCompletion,
    events: ChatCompletionChunk,
    errors: ['invalid_request', 'invalid_role', 'missing_content', 'content_limit_exceeded', 'max_tokens_exceeded', 'not_found', 'conflict', ...modelErrors, ...admissionErrors, ...upstreamErrors],
    example: { model: 'nile/qwen2.5-7b-instruct', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 32 },
  },
  'POST /v1/embeddings': {
    operationId: 'createEmbedding',
    summary: 'Create embeddings',
    description: "Vectors as arrays of numbers, or as base64 of little-endian float32 with `encoding_format: 'base64'`. Needs the `embeddings` scope.",
    tag: 'Embeddings',
    access: 'apiKey',
    response: EmbeddingsResponse,
    errors: ['empty_input', 'input_too_large', ...modelErrors, ...admissionErrors, ...upstreamErrors],
    example: { model: 'nile/bge-m3', input: ['النيل', 'the Nile'] },
  },
  'GET /v1/changelog': {
    operationId: 'listModelRetirements',
    summary: 'List model retirements',
    description: 'Every model retirement, scheduled or done, newest date first, with its replacement. Public, like a status page.',
    tag: 'Models',
    access: 'public',
    response: Changelog,
  },
  'GET /openapi.json': {
    operationId: 'getOpenApiDocument',
    summary: 'This OpenAPI document',
    tag: 'Reference',
    access: 'public',
    response: t.Record(t.String(), t.Unknown(), { description: 'An OpenAPI 3.1 document.' }),
  },
  'GET /docs': {
    operationId: 'getApiReference',
    summary: 'The API reference page',
    description: 'An HTML page that renders this document.',
    tag: 'Reference',
    access: 'public',
    response: t.String(),
    mediaType: 'text/html',
  },
} as const satisfies Record<string, Operation>
