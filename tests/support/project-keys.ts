import { expect } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import type { Database } from '../../server/adapters/postgres/database'
import { auditLogs, creditTransactions } from '../../server/adapters/postgres/schema'
import { newId } from '../../server/core/api-keys'
import { microsPerEgp } from '../../server/core/money'
import type { managementApp, SignedInUser } from './management-app'
import { chatRequest } from './test-app'

type Gateway = Awaited<ReturnType<typeof managementApp>>

/** A project created over HTTP in the owner's first (or `orgId`'s) organization; answers its JSON. */
export async function createProject(gateway: Gateway, owner: SignedInUser, body: Record<string, unknown> = {}, orgId?: string) {
  const response = await gateway.send('POST', '/v1/organization/projects', {
    token: owner.token,
    body: { name: `Project ${newId('p')}`, ...body },
    headers: orgId ? { 'openai-organization': orgId } : {},
  })
  expect(response.status).toBe(201)
  return response.json
}

/** An API key created over HTTP; answers its JSON, whose `value` is the secret. */
export async function createKey(gateway: Gateway, owner: SignedInUser, projectId: string, body: Record<string, unknown> = {}) {
  const response = await gateway.send('POST', `/v1/organization/projects/${projectId}/api_keys`, { token: owner.token, body: { name: 'test key', ...body } })
  expect(response.status).toBe(201)
  return response.json
}

/** An organization with credit, its owner, a project and a key, all but the credit over HTTP. */
export async function keyInNewOrganization(gateway: Gateway, options: { project?: Record<string, unknown>; key?: Record<string, unknown> } = {}) {
  const owner = await gateway.signUp()
  const orgId = await gateway.createOrganization(owner)
  await grantCredit(gateway.db, orgId)
  const project = await createProject(gateway, owner, options.project)
  const key = await createKey(gateway, owner, project.id, options.key)
  return { owner, orgId, project, key, secret: key.value as string }
}

/** Credit straight into the ledger: top-ups have a route of their own. */
export async function grantCredit(db: Database, orgId: string, egp = 1_000n): Promise<void> {
  await db.drizzle.insert(creditTransactions).values({ id: newId('txn'), orgId, amountMicros: egp * microsPerEgp, kind: 'top_up' })
}

/** A chat completion made with `secret`. */
export function chat(gateway: Gateway, secret: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return gateway.send('POST', '/v1/chat/completions', { token: secret, body: chatRequest(body), headers })
}

/** The audit records of one action on one target, oldest first. */
export function auditRecords(db: Database, action: string, targetId: string) {
  return db.drizzle.select().from(auditLogs).where(and(eq(auditLogs.action, action), eq(auditLogs.targetId, targetId))).orderBy(auditLogs.seq)
}
