import type { TSchema } from '@sinclair/typebox'
import * as chatSchemas from '@nilegate/shared/schemas/chat'
import * as commonSchemas from '@nilegate/shared/schemas/common'
import * as embeddingsSchemas from '@nilegate/shared/schemas/embeddings'
import serverPackage from '../../package.json'
import { isSchema, SchemaComponents, type JsonSchema } from './components'
import { documentHeaders, documentInfo, headerParameters, securitySchemes, tagDescriptions } from './document-text'
import { errorCatalogExtension, errorResponses, operationErrors } from './error-responses'
import type { Operation, Tag } from './operation'
import { operations } from './operations'
import * as accountSchemas from './responses/accounts'
import * as deploymentSchemas from './responses/deployments'
import * as errorSchemas from './responses/errors'
import * as inferenceSchemas from './responses/inference'
import * as operatorSchemas from './responses/operator'
import * as organizationSchemas from './responses/organizations'
import * as probeSchemas from './responses/probes'
import * as projectSchemas from './responses/projects'
import * as reportSchemas from './responses/reports'

/** A route as the app lists it (`app.routes`): its method, Elysia path and the schemas it validates with. */
export interface AppRoute {
  method: string
  path: string
  hooks?: { body?: unknown; query?: unknown; params?: unknown }
}

type OperationObject = { operationId: string; responses: Record<string, unknown>; [field: string]: unknown }

/** An OpenAPI 3.1 document. */
export type OpenApiDocument = {
  openapi: string
  paths: Record<string, Record<string, OperationObject>>
  components: { schemas: Record<string, JsonSchema>; parameters: Record<string, unknown>; headers: Record<string, unknown>; [field: string]: unknown }
  [field: string]: unknown
}

const namedSchemaModules = [errorSchemas, chatSchemas, commonSchemas, embeddingsSchemas, inferenceSchemas, accountSchemas, organizationSchemas, projectSchemas, reportSchemas, operatorSchemas, deploymentSchemas, probeSchemas]

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })
const parameterRef = (name: keyof typeof headerParameters) => ({ $ref: `#/components/parameters/${name}` })

function schemaOf(value: unknown): TSchema | undefined {
  return isSchema(value) ? value : undefined
}

/** The OpenAPI path of an Elysia path: `:id` becomes `{id}`. */
function openApiPath(route: AppRoute, operation: Pick<Operation, 'path'>): string {
  return operation.path ?? route.path.replace(/:(\w+)/g, '{$1}')
}

function parameters(path: string, route: AppRoute, operation: Operation, components: SchemaComponents): unknown[] {
  const paramSchemas = (schemaOf(route.hooks?.params)?.properties ?? {}) as Record<string, TSchema>
  const pathParameters = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    description: operation.params?.[name as keyof typeof operation.params],
    schema: paramSchemas[name!] ? components.use(paramSchemas[name!]!) : { type: 'string' },
  }))
  const query = schemaOf(route.hooks?.query)
  const queryParameters = query
    ? Object.entries(query.properties as Record<string, TSchema>).map(([name, schema]) => ({ name, in: 'query', required: (query.required ?? []).includes(name), schema: components.use(schema) }))
    : (operation.query ?? []).map(({ name, description, schema, required }) => ({ name, in: 'query', required: required ?? false, description, schema: components.use(schema) }))
  const headers = [
    ...(operation.access === 'member' ? [parameterRef('OpenAIOrganization'), parameterRef('OpenAIProject')] : []),
    ...(operation.idempotency === 'required' ? [parameterRef('IdempotencyKeyRequired')] : operation.idempotency ? [parameterRef('IdempotencyKey')] : []),
  ]
  return [...pathParameters, ...queryParameters, ...headers]
}

function successResponse(route: AppRoute, operation: Operation, components: SchemaComponents) {
  // Inference requests (POSTs with an API key) are admitted against the key's rate limit and may
  // be served by a model whose retirement is scheduled.
  const isInference = operation.access === 'apiKey' && route.method === 'POST'
  const headers = {
    'X-Request-Id': headerRef('X-Request-Id'),
    ...(isInference ? Object.fromEntries(['X-RateLimit-Limit-Requests', 'X-RateLimit-Remaining-Requests', 'X-RateLimit-Reset-Requests', 'Deprecation', 'Sunset', 'Link'].map((name) => [name, headerRef(name)])) : {}),
    ...(operation.idempotency ? { 'Idempotent-Replayed': headerRef('Idempotent-Replayed') } : {}),
  }
  const content: Record<string, unknown> = { [operation.mediaType ?? 'application/json']: { schema: components.use(operation.response) } }
  if (operation.events) {
    content['text/event-stream'] = {
      schema: { type: 'string', description: 'Server-sent events: `data: {ChatCompletionChunk}` per chunk, ending with `data: [DONE]`.' },
      'x-event-data': components.use(operation.events),
    }
  }
  return { description: operation.summary, headers, content }
}

function describeOperation(path: string, route: AppRoute, operation: Operation, components: SchemaComponents, envelope: JsonSchema): OperationObject {
  const body = schemaOf(route.hooks?.body)
  const errors = operationErrors(operation, {
    method: route.method,
    hasBody: body !== undefined,
    hasParameterSchema: schemaOf(route.hooks?.query) !== undefined || schemaOf(route.hooks?.params) !== undefined,
  })
  const parameterList = parameters(path, route, operation, components)
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    tags: [operation.tag],
    security: operation.access === 'public' ? [] : operation.access === 'apiKey' ? [{ ApiKey: [] }] : operation.access === 'metrics' ? [{ MetricsToken: [] }] : [{ Session: [] }],
    ...(parameterList.length > 0 ? { parameters: parameterList } : {}),
    ...(body
      ? { requestBody: { required: !operation.bodyOptional, content: { 'application/json': { schema: components.use(body), ...(operation.example === undefined ? {} : { example: operation.example }) } } } }
      : {}),
    responses: { [String(operation.status ?? 200)]: successResponse(route, operation, components), ...errorResponses(errors, envelope, headerRef) },
  }
}

const table: Readonly<Record<string, Operation>> = operations
const routeKey = (route: AppRoute) => `${route.method} ${route.path}`

/** The routes the operations table lacks, as `METHOD path`: a test keeps this empty. */
export function undocumentedRoutes(routes: readonly AppRoute[]): string[] {
  return routes.map(routeKey).filter((key) => !table[key])
}

/**
 * The OpenAPI 3.1 document of `routes`: request schemas are the routes' own, everything else
 * comes from the operations table; a route the table lacks is left out (see `undocumentedRoutes`).
 * `serverUrl` is where the gateway answers (without `/v1`).
 */
export function buildOpenApiDocument(routes: readonly AppRoute[], options: { serverUrl?: string | null } = {}): OpenApiDocument {
  const components = new SchemaComponents()
  for (const module of namedSchemaModules) components.nameExports(module)
  const envelope = components.use(errorSchemas.ErrorResponse)
  const paths: Record<string, Record<string, OperationObject>> = {}
  const tags = new Set<Tag>()
  for (const route of routes) {
    const operation = table[routeKey(route)]
    if (!operation) continue
    const path = openApiPath(route, operation)
    ;(paths[path] ??= {})[route.method.toLowerCase()] = describeOperation(path, route, operation, components, envelope)
    tags.add(operation.tag)
  }
  return {
    openapi: '3.1.1',
    info: { ...documentInfo, version: serverPackage.version },
    servers: [{ url: options.serverUrl ?? '/', description: 'This gateway' }],
    tags: (Object.keys(tagDescriptions) as Tag[]).filter((tag) => tags.has(tag)).map((name) => ({ name, description: tagDescriptions[name] })),
    paths,
    components: { schemas: components.schemas, securitySchemes, parameters: headerParameters, headers: documentHeaders },
    'x-error-catalog': errorCatalogExtension(),
  }
}
