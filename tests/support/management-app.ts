import { eq } from 'drizzle-orm'
import { GatewayError } from '@nilegate/shared/errors'
import { InProcessAdmissionStore } from '../../server/adapters/in-process/admission-store'
import type { Database } from '../../server/adapters/postgres/database'
import { memberships, users } from '../../server/adapters/postgres/schema'
import { randomBase62 } from '../../server/core/api-keys'
import { ApiKeyCache } from '../../server/core/authenticate'
import { Catalog } from '../../server/core/catalog'
import { AddressList } from '../../server/core/client-ip'
import type { Governance } from '../../server/core/governance'
import { generateSecretToken, sessionLifetimeMs, sessionTokenPrefix, type UserRecord } from '../../server/core/governance/accounts'
import { LocalChangeBus, type GovernanceChange } from '../../server/core/governance/changes'
import type { MembershipRole } from '../../server/core/governance/roles'
import type { MailMessage, Mailer } from '../../server/core/mail'
import type { LoginLimiter } from '../../server/core/login-limiter'
import type { LedgerReader, UsageEvent } from '../../server/core/ports'
import { loadCatalogFile } from '../../server/catalog-file'
import { buildApp, type AppDeps } from '../../server/http/app'
import type { ManagementDeps } from '../../server/http/management'
import { demoCatalogPath, ScriptedProvider } from './test-app'

/** Management deps whose every store call fails: for apps that only exercise inference routes. */
export function unavailableManagement(): ManagementDeps {
  const failing = new Proxy({} as Record<string, unknown>, {
    get: (_, method) => (method === 'then' ? undefined : async () => {
      throw new GatewayError('service_unavailable', 'This test app has no governance database.')
    }),
  })
  const governance = new Proxy({} as Governance, { get: () => failing })
  return { governance, trustedProxies: new AddressList([]), changes: new LocalChangeBus(), mailer: { send: async () => {} }, catalog: new Catalog([]), admission: new InProcessAdmissionStore(), ledger: failing as unknown as LedgerReader }
}

// One argon2id hash for every test user: hashing is deliberately slow.
let sharedPasswordHash: Promise<string> | null = null
export const testPassword = 'correct horse battery staple'

export interface ManagementAppOptions {
  trustedProxies?: string[]
  now?: () => number
  balanceMicros?: bigint
  /** Brute-force guards of /v1/auth/* (small limits, a fake clock); the defaults when absent. */
  loginLimiter?: LoginLimiter
  /** Sends the app's mail instead of keeping it in `mail`. */
  mailer?: Mailer
  /** What the app observes itself with (request lines, metrics); nothing when absent. */
  observability?: AppDeps['observability']
}

export interface SignedInUser {
  user: UserRecord
  token: string
  email: string
  password: string
}

/**
 * The whole gateway app over a real database (PGlite or Postgres from describeEachDatabase), with a
 * scripted provider and in-process admission; helpers make signed-in users and organizations
 * without going through mail.
 */
export async function managementApp(db: Database, options: ManagementAppOptions = {}) {
  const changes = new LocalChangeBus()
  const mail: MailMessage[] = []
  const catalog = new Catalog(await loadCatalogFile(demoCatalogPath))
  const admission = new InProcessAdmissionStore()
  const management: ManagementDeps = {
    governance: db.governance,
    trustedProxies: new AddressList(options.trustedProxies ?? []),
    changes,
    mailer: options.mailer ?? { send: async (message) => void mail.push(message) },
    catalog,
    admission,
    ledger: db.ledger,
    now: options.now,
    loginLimiter: options.loginLimiter,
  }
  const keys = new ApiKeyCache(db.identities)
  // As in main.ts: a published change drops the organization's cached keys at once.
  keys.subscribeTo(changes)
  const usage: UsageEvent[] = []
  const provider = new ScriptedProvider()
  const app = buildApp({
    catalog,
    providerFor: () => provider,
    usage: { record: (event) => usage.push(event) },
    admission,
    ledger: db.ledger,
    log: () => {},
    keys,
    bodyBudgetBytes: 256 * 1024 * 1024,
    management,
    observability: options.observability,
  })

  /** A request to the app; `token` becomes the bearer, a non-string `body` is sent as JSON. */
  async function send(method: string, path: string, init: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...init.headers }
    let body: BodyInit | undefined
    if (init.body !== undefined) {
      headers['content-type'] ??= 'application/json'
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
    }
    const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
    const text = await response.text()
    let json: any = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {}
    return { status: response.status, headers: response.headers, json, text }
  }

  /** A user with a live session, straight through the repositories. */
  async function signUp(options: { email?: string; verified?: boolean; operator?: boolean; name?: string } = {}): Promise<SignedInUser> {
    sharedPasswordHash ??= Bun.password.hash(testPassword, 'argon2id')
    const email = options.email ?? `user-${randomBase62(10).toLowerCase()}@example.test`
    const user = await db.governance.accounts.createUser({ email, name: options.name ?? null, passwordHash: await sharedPasswordHash, emailVerified: options.verified ?? true }, null)
    if (options.operator) await db.drizzle.update(users).set({ isOperator: true }).where(eq(users.id, user.id))
    const { secret, hashHex } = generateSecretToken(sessionTokenPrefix)
    await db.governance.accounts.createSession(
      { userId: user.id, tokenHash: hashHex, expiresAt: new Date(Date.now() + sessionLifetimeMs), ip: null, userAgent: null },
      { type: 'user', id: user.id, email: user.email, ip: null, requestId: null },
    )
    return { user: { ...user, isOperator: options.operator ?? false }, token: secret, email: user.email, password: testPassword }
  }

  /** An organization created over HTTP by `owner`; returns its id. */
  async function createOrganization(owner: SignedInUser, name = `Org ${randomBase62(6)}`): Promise<string> {
    const response = await send('POST', '/v1/organizations', { token: owner.token, body: { name } })
    if (response.status !== 201) throw new Error(`creating an organization failed: ${response.status} ${response.text}`)
    return response.json.id as string
  }

  /** A new signed-in user added to `orgId` with `role`, straight through the database. */
  async function addMember(orgId: string, role: MembershipRole): Promise<SignedInUser> {
    const member = await signUp()
    await db.drizzle.insert(memberships).values({ orgId, userId: member.user.id, role })
    return member
  }

  /** Serves the app on a real socket (port 0), for tests that need the peer address. */
  function listen() {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: app.fetch })
    app.server = server
    return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) }
  }

  return { app, db, send, signUp, addMember, createOrganization, listen, keys, changes, mail, usage, provider, admission, management, catalog }
}

/** A platform operator signed in on `gateway`, the governance changes published from now on, and requests made as the operator. */
export async function signInOperator(gateway: Awaited<ReturnType<typeof managementApp>>) {
  const operator = await gateway.signUp({ operator: true })
  const changes: GovernanceChange[] = []
  gateway.changes.subscribe((change) => void changes.push(change))
  const admin = (method: string, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) => gateway.send(method, path, { token: operator.token, ...init })
  return { operator, changes, admin }
}
