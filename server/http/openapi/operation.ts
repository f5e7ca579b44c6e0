import type { TSchema } from 'elysia'
import type { ErrorCode } from '@nilegate/shared/errors'

/**
 * Who may call a route, which decides its security scheme and the codes its guard answers with:
 * an API key (inference), a session (`session`; `verifiedUser` also needs a verified address;
 * `member` acts on the selected organization), a platform operator's session, the metrics token
 * (METRICS_TOKEN, when set), or anyone.
 */
export type Access = 'public' | 'apiKey' | 'session' | 'verifiedUser' | 'member' | 'operator' | 'metrics'

/** The groups of operations, in the order the reference shows them. */
export type Tag = 'Chat' | 'Embeddings' | 'Models' | 'Auth' | 'Organizations' | 'Members' | 'Projects' | 'API keys' | 'Usage' | 'Audit logs' | 'Operator' | 'Operations' | 'Reference'

/** A query parameter of a route that reads its query string by hand. */
export interface QueryParameter {
  name: string
  description: string
  schema: TSchema
  required?: boolean
}

/** What the document says about one route beyond the schemas the route itself validates with. */
export interface Operation {
  operationId: string
  summary: string
  description?: string
  tag: Tag
  access: Access
  /** The body of a success. */
  response: TSchema
  /** The media type of a success; JSON when absent. */
  mediaType?: 'text/html' | 'text/plain'
  /** The status of a success; 200 when absent. */
  status?: 201 | 202
  /** Codes the handler answers beyond those its access, body, query and idempotency imply. */
  errors?: readonly ErrorCode[]
  /** Whether the route takes an `Idempotency-Key` header, and whether it must. */
  idempotency?: 'optional' | 'required'
  /** A request body that may be left out (read as `{}`). */
  bodyOptional?: boolean
  /** A request body to show, valid against the route's schema. */
  example?: unknown
  /** The OpenAPI path of a wildcard route, whose ids may contain '/'. */
  path?: string
  /** Descriptions of path parameters. */
  params?: Readonly<Record<string, string>>
  /** The query parameters of a route without a query schema. */
  query?: readonly QueryParameter[]
  /** The schema of each server-sent event, for routes that can stream. */
  events?: TSchema
}
