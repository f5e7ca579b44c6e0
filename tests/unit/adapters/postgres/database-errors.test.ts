import { describe, expect, test } from 'bun:test'
import { DrizzleQueryError } from 'drizzle-orm/errors'
import { GatewayError } from '@nilegate/shared/errors'
import { answeringOutages, DatabaseStatementFailed, isDatabaseOutage } from '../../../../server/adapters/postgres/database-errors'

const keyHash = 'ab'.repeat(32)
const failedQuery = (cause: Error & { code?: string }) => new DrizzleQueryError('select * from api_keys where secret_hash = $1', [keyHash], cause)
const withCode = (message: string, code: string) => Object.assign(new Error(message), { code })

describe('answeringOutages', () => {
  test('a connection that is gone becomes 503 service_unavailable, logged once with its cause and no statement', async () => {
    const logged: string[] = []
    const store = answeringOutages((message) => logged.push(message))({ find: () => Promise.reject(failedQuery(withCode('write CONNECTION_CLOSED 127.0.0.1:5432', 'CONNECTION_CLOSED'))) })

    const errors = await Promise.all([store.find().catch((error) => error), store.find().catch((error) => error)])

    expect(errors.map((error) => [error instanceof GatewayError, error.code, error.status, error.retryAfterS])).toEqual([
      [true, 'service_unavailable', 503, 30],
      [true, 'service_unavailable', 503, 30],
    ])
    expect(logged).toEqual(['the database is not answering (write CONNECTION_CLOSED 127.0.0.1:5432 (CONNECTION_CLOSED)); requests that need it get 503 service_unavailable'])
  })

  test('a failed statement keeps its cause and code and drops the statement and its parameters', async () => {
    const store = answeringOutages(() => {})({ find: () => Promise.reject(failedQuery(withCode('relation "api_keys" does not exist', '42P01'))) })

    const error = await store.find().catch((error) => error)

    expect(error).toBeInstanceOf(DatabaseStatementFailed)
    expect([error.message, error.code]).toEqual(['the database refused a statement: relation "api_keys" does not exist (42P01)', '42P01'])
    expect(Bun.inspect(error)).not.toContain(keyHash)
    expect(Bun.inspect(error)).not.toContain('select')
  })

  test("the repositories' own answers (conflicts, not found) pass unchanged", async () => {
    const conflict = new GatewayError('conflict')
    const store = answeringOutages(() => {})({ create: () => Promise.reject(conflict), count: () => Promise.resolve(3) })

    expect(await store.create().catch((error) => error)).toBe(conflict)
    expect(await store.count()).toBe(3)
  })
})

describe('isDatabaseOutage', () => {
  test('knows lost connections, refused connections and a server shutting down or starting from a failed statement', () => {
    expect(isDatabaseOutage(failedQuery(withCode('connect ECONNREFUSED', 'ECONNREFUSED')))).toBe(true)
    expect(isDatabaseOutage(withCode('terminating connection due to administrator command', '57P01'))).toBe(true)
    expect(isDatabaseOutage(withCode('the database system is starting up', '57P03'))).toBe(true)
    expect(isDatabaseOutage(withCode('connection failure', '08006'))).toBe(true)
    expect(isDatabaseOutage(failedQuery(withCode('duplicate key value violates unique constraint', '23505')))).toBe(false)
  })
})
