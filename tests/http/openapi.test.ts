import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { compileErrors, validate } from '@readme/openapi-parser'
import type { Static } from '@sinclair/typebox'
import Ajv2020 from 'ajv/dist/2020'
import { errorCatalog, isErrorCode, type ErrorBody } from '@nilegate/shared/errors'
import type { ChatCompletionChunk as ChunkType } from '@nilegate/shared/schemas/chat'
import type { App } from '../../server/http/app'
import { undocumentedRoutes, type OpenApiDocument } from '../../server/http/openapi/document'
import { isApiRoute } from '../../server/http/app'
import { operations, type OperationKey } from '../../server/http/openapi/operations'
import type { ErrorResponse } from '../../server/http/openapi/responses/errors'
import type { ChatCompletionChunk } from '../../server/http/openapi/responses/inference'
import { openTestDatabase, slowHookTimeoutMs, type TestDatabase } from '../support/databases'
import { managementApp } from '../support/management-app'
import { SimulatorProvider } from '../../server/adapters/providers/simulator'
import { chatModel, embeddingsModel, testApp } from '../support/test-app'

// The response schemas name the fields of what the routes return, as the SDK sees them through
// `App`, all the way down: `bun run typecheck` fails naming any operation whose route answers a
// field its schema lacks, or the reverse. (Field types are checked on real answers below: some
// route types are wider than the values, like a `role` typed as any string.)
type Routes = App['~Routes']
type Get<T, K extends PropertyKey> = K extends keyof T ? T[K] : never
type At<T, Path extends string> = Path extends `/${infer Rest}` ? At<T, Rest> : Path extends `${infer Head}/${infer Rest}` ? At<Get<T, Head>, Rest> : Get<T, Path>
type Answer<K extends string> = K extends `${infer Method} ${infer Path}` ? Exclude<Get<Get<Get<At<Routes, Path>, Lowercase<Method>>, 'response'>, 200>, Response> : never
type Fields<T> = T extends readonly (infer Item)[] ? Fields<Item>[] : T extends object ? { [K in keyof T]-?: Fields<Exclude<T[K], null | undefined>> } : 'value'
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type Drifted = { [K in OperationKey]: Same<Fields<Static<(typeof operations)[K]['response']>>, Fields<Answer<K>>> extends true ? never : K }[OperationKey]
const everyResponseSchemaNamesTheFieldsOfItsRoute: [Drifted] extends [never] ? true : `schema and route differ: ${Drifted}` = true
const chunkSchemaIsTheSharedType: Same<Static<typeof ChatCompletionChunk>, ChunkType> = true
const errorSchemaIsTheEnvelope: Same<Static<typeof ErrorResponse>, ErrorBody> = true
void [everyResponseSchemaNamesTheFieldsOfItsRoute, chunkSchemaIsTheSharedType, errorSchemaIsTheEnvelope]

/** The parts of an operation object the tests read. */
type Operation = {
  security: unknown[]
  parameters?: Array<{ $ref?: string; name?: string }>
  requestBody?: { content: { 'application/json': { example?: unknown } } }
  responses: Record<string, { 'x-error-codes'?: Record<string, string> }>
}

/** The document's operations as [method, path, operation]. */
function operationsOf(document: OpenApiDocument): Array<[string, string, Operation]> {
  return Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method): [string, string, Operation] => [method, path, operationAt(document, method, path)]))
}

function operationAt(document: OpenApiDocument, method: string, path: string): Operation {
  const operation = document.paths[path]?.[method]
  if (!operation) throw new Error(`${method} ${path} is not in the document`)
  return operation as unknown as Operation
}

/** The request example of `POST path`. */
function exampleOf(document: OpenApiDocument, path: string): unknown {
  const example = operationAt(document, 'post', path).requestBody?.content['application/json'].example
  if (example === undefined) throw new Error(`POST ${path} has no example`)
  return example
}

function errorCodes(operation: Operation): string[] {
  return Object.values(operation.responses).flatMap((response) => Object.keys(response['x-error-codes'] ?? {}))
}

/** A JSON pointer into the document. */
function pointer(...segments: string[]): string {
  return segments.map((segment) => `/${segment.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('')
}

/** Where the document holds schemas: its components, and every `schema` of a parameter, header or body. */
function schemaPointers(document: OpenApiDocument): string[] {
  const found = Object.keys(document.components.schemas).map((name) => pointer('components', 'schemas', name))
  const walk = (value: unknown, at: string[]): void => {
    if (typeof value !== 'object' || value === null) return
    for (const [key, child] of Object.entries(value)) {
      if ((key === 'schema' || key === 'x-event-data') && typeof child === 'object') found.push(pointer(...at, key))
      else walk(child, [...at, key])
    }
  }
  walk({ paths: document.paths, components: { parameters: document.components.parameters, headers: document.components.headers } }, [])
  return found
}

/** Validates values against schemas of the document, found by pointer; strict, so a keyword JSON Schema lacks fails. */
function schemaChecker(document: OpenApiDocument) {
  const ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: false })
  ajv.addKeyword('components').addKeyword('paths')
  ajv.addSchema({ $id: 'openapi.json', components: document.components, paths: document.paths })
  return {
    /** Compiles every schema of the document; throws at the first that is not valid JSON Schema. */
    compileAll: () => schemaPointers(document).forEach((at) => ajv.getSchema(`openapi.json#${at}`)),
    errors(at: string, value: unknown): string[] {
      const check = ajv.getSchema(`openapi.json#${at}`)
      if (!check) throw new Error(`No schema at ${at}`)
      return check(value) ? [] : (check.errors ?? []).map((error) => `${error.instancePath} ${error.message}`)
    },
  }
}

/** Checks answers against what the document says `method path` answers with their status. */
function answerChecker(document: OpenApiDocument) {
  const schemas = schemaChecker(document)
  return {
    schemas,
    expectDocumented(method: string, path: string, answer: { status: number; json: unknown }): void {
      const response = operationAt(document, method, path).responses[String(answer.status)]
      if (!response) throw new Error(`${method} ${path} answered ${answer.status}, which the document does not list: ${JSON.stringify(answer.json)}`)
      if (answer.status >= 400) expect(Object.keys(response['x-error-codes']!)).toContain((answer.json as ErrorBody).error.code)
      const errors = schemas.errors(pointer('paths', path, method, 'responses', String(answer.status), 'content', 'application/json', 'schema'), answer.json)
      expect({ method, path, errors }).toEqual({ method, path, errors: [] })
    },
  }
}

describe('the OpenAPI document, GET /openapi.json', () => {
  let inference: Awaited<ReturnType<typeof testApp>>
  let document: OpenApiDocument
  let answers: ReturnType<typeof answerChecker>

  beforeAll(async () => {
    inference = await testApp()
    document = await inference.app.handle(new Request('http://localhost/openapi.json')).then((response) => response.json())
    answers = answerChecker(document)
  })

  test('answers without credentials, with X-Request-Id, and the reference page renders it', async () => {
    const json = await inference.app.handle(new Request('http://localhost/openapi.json'))
    const page = await inference.app.handle(new Request('http://localhost/docs'))
    const post = await inference.app.handle(new Request('http://localhost/openapi.json', { method: 'POST' }))

    expect({ status: json.status, type: json.headers.get('content-type'), requestId: json.headers.get('x-request-id') }).toEqual({ status: 200, type: expect.stringMatching(/^application\/json/), requestId: expect.stringMatching(/^req_/) })
    expect({ status: page.status, type: page.headers.get('content-type'), requestId: page.headers.get('x-request-id') }).toEqual({ status: 200, type: 'text/html; charset=utf-8', requestId: expect.stringMatching(/^req_/) })
    // What the page loads, and that it loads it from the gateway, tests/http/docs-offline.test.ts checks.
    expect(await page.text()).toContain('<main id="reference">')
    expect({ status: post.status, allow: post.headers.get('allow') }).toEqual({ status: 405, allow: 'GET' })
  })

  test('is a valid OpenAPI 3.1 document whose schemas are strict JSON Schema', async () => {
    const result = await validate(structuredClone(document) as never)

    expect(result.valid ? '' : compileErrors(result)).toBe('')
    expect(document.openapi).toStartWith('3.1.')
    expect(() => answers.schemas.compileAll()).not.toThrow()
  })

  test('documents every route of the API the app answers, and no other; the files of the pages are no part of it', () => {
    const routes = inference.app.routes.filter(isApiRoute)
    expect(inference.app.routes.length).toBeGreaterThan(routes.length)
    expect(Object.keys(document.paths).filter((path) => !path.startsWith('/v1/') && !['/openapi.json', '/docs', '/healthz', '/readyz', '/metrics'].includes(path))).toEqual([])
    const documented = operationsOf(document).map(([method, path]) => `${method.toUpperCase()} ${path}`)
    const routeKeys = new Set(routes.map((route) => `${route.method} ${route.path}`))

    expect(undocumentedRoutes(routes)).toEqual([])
    expect(undocumentedRoutes([...routes, { method: 'GET', path: '/v1/new' }])).toEqual(['GET /v1/new'])
    expect(Object.keys(operations).filter((key) => !routeKeys.has(key))).toEqual([])
    expect(documented.length).toBe(routes.length)
    for (const route of routes) {
      const path = route.path.replace(/:(\w+)/g, '{$1}')
      // A wildcard route (ids with '/') is documented under its prefix, with a named parameter.
      const match = path.endsWith('*')
        ? documented.find((operation) => operation.startsWith(`${route.method} ${path.slice(0, -1)}{`))
        : documented.find((operation) => operation === `${route.method} ${path}`)
      expect({ route: `${route.method} ${route.path}`, documentedAs: match }).toEqual({ route: `${route.method} ${route.path}`, documentedAs: expect.any(String) })
    }
  })

  test('gives every operation the error codes it can answer, under their catalog status and type', () => {
    for (const [method, path, operation] of operationsOf(document)) {
      const isPublic = operation.security.length === 0
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue
        const codes = Object.entries(response['x-error-codes'] ?? {})
        const misfiled = codes.filter(([code, type]) => !isErrorCode(code) || errorCatalog[code].status !== Number(status) || errorCatalog[code].type !== type)
        expect({ method, path, status, listed: codes.length > 0, misfiled }).toEqual({ method, path, status, listed: true, misfiled: [] })
      }
      expect({ method, path, internal: errorCodes(operation).includes('internal_error'), unauthenticated: errorCodes(operation).includes('missing_auth_header') }).toEqual({ method, path, internal: true, unauthenticated: !isPublic })
    }
    const codesOf = (method: string, path: string) => errorCodes(operationAt(document, method, path))
    expect(codesOf('post', '/v1/chat/completions')).toEqual(expect.arrayContaining(['invalid_api_key', 'key_scope_insufficient', 'invalid_role', 'model_sunset', 'request_too_large', 'content_limit_exceeded', 'rate_limit_exceeded', 'insufficient_balance', 'project_spend_cap_exceeded', 'no_healthy_backends']))
    expect(codesOf('post', '/v1/embeddings')).toEqual(expect.arrayContaining(['empty_input', 'input_too_large', 'spending_cap_reached']))
    expect(codesOf('post', '/v1/embeddings')).not.toContain('invalid_role')
    expect(codesOf('post', '/v1/organization/projects')).toEqual(expect.arrayContaining(['token_revoked', 'not_a_member', 'permission_denied', 'org_suspended', 'conflict']))
    expect(codesOf('get', '/v1/organization/projects')).not.toContain('org_suspended')
    expect(codesOf('post', '/v1/auth/login')).toEqual(expect.arrayContaining(['invalid_credentials', 'rate_limit_exceeded']))
    expect(codesOf('get', '/v1/changelog')).toEqual(['internal_error'])
  })

  test('names the security scheme and headers of each kind of route', () => {
    const operation = (method: string, path: string) => operationAt(document, method, path)
    const headers = (method: string, path: string) => (operation(method, path).parameters ?? []).map((parameter) => parameter.$ref?.split('/').at(-1) ?? parameter.name)

    expect(operation('post', '/v1/chat/completions').security).toEqual([{ ApiKey: [] }])
    expect(operation('get', '/v1/organization/projects').security).toEqual([{ Session: [] }])
    expect(operation('get', '/v1/admin/users').security).toEqual([{ Session: [] }])
    expect(operation('post', '/v1/auth/login').security).toEqual([])
    expect(headers('post', '/v1/organization/projects')).toEqual(['OpenAIOrganization', 'OpenAIProject', 'IdempotencyKey'])
    expect(headers('post', '/v1/admin/organizations/{id}/credits')).toEqual(['id', 'IdempotencyKeyRequired'])
    expect(headers('get', '/v1/models/{model}')).toEqual(['model'])
  })

  test('has request examples that its schemas and the routes accept, and rejects what the routes reject', async () => {
    const chatSchema = pointer('paths', '/v1/chat/completions', 'post', 'requestBody', 'content', 'application/json', 'schema')
    const noMessages = { model: chatModel, messages: [] }

    const chat = await inference.send('POST', '/v1/chat/completions', JSON.stringify(exampleOf(document, '/v1/chat/completions')))
    const embeddings = await inference.send('POST', '/v1/embeddings', JSON.stringify(exampleOf(document, '/v1/embeddings')))
    const refused = await inference.send('POST', '/v1/chat/completions', JSON.stringify(noMessages))

    for (const [method, path, operation] of operationsOf(document)) {
      const example = operation.requestBody?.content['application/json'].example
      if (example === undefined) continue
      expect({ method, path, errors: answers.schemas.errors(pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema'), example) }).toEqual({ method, path, errors: [] })
    }
    expect([chat.status, embeddings.status]).toEqual([200, 200])
    expect([refused.status, answers.schemas.errors(chatSchema, noMessages).length > 0]).toEqual([400, true])
  })

  test('describes what the inference routes answer, streamed events and errors included', async () => {
    const json = async (response: Response) => ({ status: response.status, json: await response.json() })
    const chat = (body: object) => inference.send('POST', '/v1/chat/completions', JSON.stringify({ model: chatModel, messages: [{ role: 'user', content: 'Hi' }], ...body }))

    answers.expectDocumented('get', '/v1/models', await json(await inference.send('GET', '/v1/models')))
    answers.expectDocumented('get', '/v1/models/{model}', await json(await inference.send('GET', `/v1/models/${encodeURIComponent(embeddingsModel)}`)))
    answers.expectDocumented('get', '/v1/changelog', await json(await inference.send('GET', '/v1/changelog')))
    answers.expectDocumented('post', '/v1/chat/completions', await json(await chat({})))
    answers.expectDocumented('post', '/v1/chat/completions', await json(await chat({ messages: [{ role: 'robot', content: 'Hi' }] })))
    answers.expectDocumented('post', '/v1/chat/completions', await json(await inference.send('POST', '/v1/chat/completions', '{}', { authorization: 'Bearer ngs_session' })))
    for (const encoding_format of ['float', 'base64']) {
      answers.expectDocumented('post', '/v1/embeddings', await json(await inference.send('POST', '/v1/embeddings', JSON.stringify({ model: embeddingsModel, input: ['a', 'b'], encoding_format }))))
    }

    const eventSchema = pointer('paths', '/v1/chat/completions', 'post', 'responses', '200', 'content', 'text/event-stream', 'x-event-data')
    // The simulator answers log probabilities when asked; the scripted provider never does.
    const simulated = await testApp({ providerFor: () => new SimulatorProvider() })
    const withLogprobs = { model: chatModel, messages: [{ role: 'user', content: 'Hi' }], logprobs: true, top_logprobs: 2 }
    const logprobsAnswer = await json(await simulated.send('POST', '/v1/chat/completions', JSON.stringify(withLogprobs)))
    expect(logprobsAnswer.json.choices[0].logprobs.content.length).toBeGreaterThan(0)
    answers.expectDocumented('post', '/v1/chat/completions', logprobsAnswer)
    for (const response of [await chat({ stream: true, stream_options: { include_usage: true } }), await simulated.send('POST', '/v1/chat/completions', JSON.stringify({ ...withLogprobs, stream: true }))]) {
      const events = (await response.text()).split('\n\n').filter(Boolean).map((event) => event.replace(/^data: /, ''))
      expect(events.at(-1)).toBe('[DONE]')
      expect(events.slice(0, -1).flatMap((event) => answers.schemas.errors(eventSchema, JSON.parse(event)))).toEqual([])
    }
  })
})

describe('the OpenAPI document against the management and operator routes', () => {
  let database: TestDatabase
  let gateway: Awaited<ReturnType<typeof managementApp>>
  let document: OpenApiDocument
  let answers: ReturnType<typeof answerChecker>

  beforeAll(async () => {
    database = await openTestDatabase('postgres')
    gateway = await managementApp(database.db)
    document = await gateway.app.handle(new Request('http://localhost/openapi.json')).then((response) => response.json())
    answers = answerChecker(document)
  }, slowHookTimeoutMs)
  afterAll(() => database?.dispose(), slowHookTimeoutMs)

  test('describes what they answer, taking the request examples', async () => {
    const owner = await gateway.signUp()
    const operator = await gateway.signUp({ operator: true })
    const as = (user: { token: string }) => (method: string, path: string, body?: unknown, headers?: Record<string, string>) => gateway.send(method, path, { token: user.token, body, headers })
    const ownerSends = as(owner)
    const operatorSends = as(operator)
    const documented = async (method: string, template: string, answer: Promise<{ status: number; json: unknown }>) => {
      const settled = await answer
      answers.expectDocumented(method, template, settled)
      return settled.json as { id: string }
    }

    await documented('post', '/v1/auth/login', gateway.send('POST', '/v1/auth/login', { body: { email: owner.email, password: owner.password } }))
    await documented('get', '/v1/auth/me', ownerSends('GET', '/v1/auth/me'))
    await documented('get', '/v1/auth/sessions', ownerSends('GET', '/v1/auth/sessions'))
    const org = await documented('post', '/v1/organizations', ownerSends('POST', '/v1/organizations', exampleOf(document, '/v1/organizations')))
    await documented('get', '/v1/organizations', ownerSends('GET', '/v1/organizations'))
    await documented('post', '/v1/organization', ownerSends('POST', '/v1/organization', exampleOf(document, '/v1/organization')))
    const project = await documented('post', '/v1/organization/projects', ownerSends('POST', '/v1/organization/projects', exampleOf(document, '/v1/organization/projects')))
    await documented('get', '/v1/organization/projects', ownerSends('GET', '/v1/organization/projects?limit=5'))
    const keys = `/v1/organization/projects/${project.id}/api_keys`
    const key = await documented('post', '/v1/organization/projects/{project_id}/api_keys', ownerSends('POST', keys, exampleOf(document, '/v1/organization/projects/{project_id}/api_keys')))
    await documented('get', '/v1/organization/projects/{project_id}/api_keys', ownerSends('GET', keys))
    await documented('delete', '/v1/organization/projects/{project_id}/api_keys/{key_id}', ownerSends('DELETE', `${keys}/${key.id}`))
    await documented('post', '/v1/organization/invites', ownerSends('POST', '/v1/organization/invites', exampleOf(document, '/v1/organization/invites')))
    await documented('get', '/v1/organization/invites', ownerSends('GET', '/v1/organization/invites'))
    await documented('get', '/v1/organization/users', ownerSends('GET', '/v1/organization/users'))
    await documented('get', '/v1/organization/audit_logs', ownerSends('GET', '/v1/organization/audit_logs?limit=50'))
    await documented('get', '/v1/organization/usage', ownerSends('GET', `/v1/organization/usage?start_time=${Math.floor(Date.now() / 1000) - 86_400}&group_by=model`))
    await documented('get', '/v1/organization/balance', ownerSends('GET', '/v1/organization/balance'))
    await documented('get', '/v1/organization/projects/{project_id}', ownerSends('GET', '/v1/organization/projects/proj_missing'))
    await documented('post', '/v1/organization/projects', ownerSends('POST', '/v1/organization/projects', exampleOf(document, '/v1/organization/projects')))

    await documented('get', '/v1/admin/organizations', operatorSends('GET', '/v1/admin/organizations'))
    await documented('post', '/v1/admin/organizations/{id}/credits', operatorSends('POST', `/v1/admin/organizations/${org.id}/credits`, exampleOf(document, '/v1/admin/organizations/{id}/credits'), { 'idempotency-key': 'top-up-1' }))
    await documented('post', '/v1/admin/organizations/{id}', operatorSends('POST', `/v1/admin/organizations/${org.id}`, exampleOf(document, '/v1/admin/organizations/{id}')))
    await documented('get', '/v1/admin/users', operatorSends('GET', '/v1/admin/users'))
    await documented('get', '/v1/admin/deployments', operatorSends('GET', '/v1/admin/deployments'))
    await documented('post', '/v1/admin/users/{id}/disable', operatorSends('POST', `/v1/admin/users/${owner.user.id}/disable`))
    await documented('post', '/v1/admin/models/{model_id}/retire', operatorSends('POST', `/v1/admin/models/${chatModel}/retire`, exampleOf(document, '/v1/admin/models/{model_id}/retire')))
    await documented('delete', '/v1/admin/models/{model_id}/retirement', operatorSends('DELETE', `/v1/admin/models/${chatModel}/retirement`))
    await documented('get', '/v1/admin/users', ownerSends('GET', '/v1/admin/users'))
  })
})
