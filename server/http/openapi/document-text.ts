import type { Tag } from './operation'

/** The document's `info`, less its version. */
export const documentInfo = {
  title: 'nilegate',
  summary: 'An OpenAI-compatible, prepaid inference gateway, billed per token in Egyptian pounds.',
  description: [
    'Inference (`/v1/models`, `/v1/chat/completions`, `/v1/embeddings`) speaks the OpenAI wire format and takes an **API key** (`Authorization: Bearer sk-...`).',
    'The management API (`/v1/auth/*`, `/v1/organizations`, `/v1/organization/*`, `/v1/invites/accept`) and the operators\' API (`/v1/admin/*`) take a **session token** (`Authorization: Bearer ngs_...`) from `POST /v1/auth/login`;',
    'an API key there, or a session token on an inference route, is 401 `invalid_token_type`.',
    '',
    '`OpenAI-Organization` and `OpenAI-Project` choose the organization and project a session acts on (the first organization by default).',
    'Lists take `after` and `limit` and answer `{object: "list", data, first_id, last_id, has_more}`.',
    'POSTs that create or change something take an `Idempotency-Key`: the same key and request replays the first answer (`Idempotent-Replayed: true`); the same key with another request is 409 `conflict`.',
    '',
    'Money is shown as EGP decimal strings with 6 decimals. Every answer carries `X-Request-Id`.',
    'Errors come in the OpenAI envelope `{"error": {"type", "message", "code", "param"}}`; each response lists the codes it can carry in `x-error-codes`,',
    'and those advising a retry carry `Retry-After` (seconds).',
  ].join('\n'),
}

/** Each tag's description, in the order the reference shows them. */
export const tagDescriptions: Readonly<Record<Tag, string>> = {
  Chat: 'Chat completions, plain or streamed.',
  Embeddings: 'Vectors for text, or for token ids of cl100k_base (decoded to their text).',
  Models: 'The catalog: models, prices and retirements.',
  Auth: 'Accounts and sessions.',
  Organizations: 'Your organizations and their settings.',
  Members: 'Members, roles and invitations.',
  Projects: 'Projects: monthly spend caps, RPM overrides and enabled models.',
  'API keys': 'Keys of a project: expiry, RPM limit, monthly cap, IP allow-list and scopes.',
  Usage: 'Usage, cost and balance.',
  'Audit logs': 'Every change, login and denied key use.',
  Operator: 'Platform operators: organizations (suspension, plan, credit), users, model retirements and deployments.',
  Operations: 'Probes for load balancers and orchestrators, and metrics for Prometheus.',
  Reference: 'This document and its reference page.',
}

export const securitySchemes = {
  ApiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'sk-...', description: 'An API key of a project, created with `POST /v1/organization/projects/{project_id}/api_keys`.' },
  Session: { type: 'http', scheme: 'bearer', bearerFormat: 'ngs_...', description: 'A session token from `POST /v1/auth/login`, valid for 12 hours.' },
  MetricsToken: { type: 'http', scheme: 'bearer', description: 'The token of the `METRICS_TOKEN` setting; required only when it is set.' },
}

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  description: 'Runs the request at most once: the same key and request replays the first answer; the same key with another request is 409 `conflict`.',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
}

/** The request headers of the management API. */
export const headerParameters = {
  OpenAIOrganization: { name: 'OpenAI-Organization', in: 'header', required: false, description: "The organization to act on; the user's first when absent.", schema: { type: 'string' } },
  OpenAIProject: { name: 'OpenAI-Project', in: 'header', required: false, description: 'The project to act on, of the selected organization; narrows usage and balance to it.', schema: { type: 'string' } },
  IdempotencyKey: { ...idempotencyKey, required: false },
  IdempotencyKeyRequired: { ...idempotencyKey, required: true },
}

/** The response headers. */
export const documentHeaders = {
  'X-Request-Id': { description: 'The id of this request, for support and the audit trail.', schema: { type: 'string' } },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
  'X-RateLimit-Limit-Requests': { description: "The key's effective requests-per-minute limit.", schema: { type: 'integer' } },
  'X-RateLimit-Remaining-Requests': { description: 'Requests left in the current 60-second window.', schema: { type: 'integer' } },
  'X-RateLimit-Reset-Requests': {
    description: "Time until the oldest request in the key's 60-second window leaves it and a place frees up, in OpenAI's format (Go durations: `150ms`, `17.2s`, `1m0s`).",
    schema: { type: 'string', examples: ['42.5s'] },
  },
  'Idempotent-Replayed': { description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
  Deprecation: { description: 'On models whose retirement is scheduled: `@<unix seconds>` of the retirement (RFC 9745).', schema: { type: 'string' } },
  Sunset: { description: 'On models whose retirement is scheduled: when the model stops answering (RFC 8594).', schema: { type: 'string' } },
  Link: { description: 'On models whose retirement is scheduled: `</v1/changelog>; rel="sunset"`.', schema: { type: 'string' } },
}
