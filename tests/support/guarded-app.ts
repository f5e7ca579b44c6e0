import { GatewayError } from '@nilegate/shared/errors'
import { InProcessAdmissionStore } from '../../server/adapters/in-process/admission-store'
import { hashApiKey, randomBase62 } from '../../server/core/api-keys'
import type { AuthFailureLimiter } from '../../server/core/auth-failure-limiter'
import { ApiKeyCache } from '../../server/core/authenticate'
import { Catalog } from '../../server/core/catalog'
import type { Governance } from '../../server/core/governance'
import { loadCatalogFile } from '../../server/catalog-file'
import { buildApp } from '../../server/http/app'
import { unavailableManagement } from './management-app'
import { chatRequest, demoCatalogPath, keyIdentity, ScriptedProvider } from './test-app'

/** A well-formed API key that no store knows. */
export function madeUpKey(): string {
  return `sk-${randomBase62(40)}`
}

/**
 * The gateway's app with known API keys (`secrets`, two unless `knownKeys` says), a key store and a session store that
 * count their lookups (no session exists), for tests of what reaches the database and the body
 * budget before and after authentication.
 */
export async function guardedApp(options: { bodyBudgetBytes?: number; bodyIdleTimeoutMs?: number; authFailures?: AuthFailureLimiter; knownKeys?: number } = {}) {
  const secrets = Array.from({ length: options.knownKeys ?? 2 }, (_, i) => `sk-guard${String(i).padStart(40, 'k')}`)
  const identities = new Map(secrets.map((secret, i) => [hashApiKey(secret), keyIdentity({ keyId: `key_${i}` })]))
  const lookups = { keys: 0, sessions: 0 }
  const management = unavailableManagement()
  const accounts = {
    findSessionByTokenHash: async () => {
      lookups.sessions++
      return null
    },
  }
  management.governance = new Proxy({} as Governance, {
    get: (_, part) =>
      part === 'accounts'
        ? accounts
        : new Proxy({}, { get: () => async () => Promise.reject(new GatewayError('service_unavailable', 'This test app has no governance database.')) }),
  })
  const provider = new ScriptedProvider()
  const app = buildApp({
    catalog: new Catalog(await loadCatalogFile(demoCatalogPath)),
    providerFor: () => provider,
    usage: { record: () => {} },
    admission: new InProcessAdmissionStore(),
    ledger: { readCounters: async (_, month) => ({ month, balanceMicros: 1_000_000_000_000n, keySpend: new Map(), projectSpend: new Map(), recordedIds: [] }) },
    log: () => {},
    keys: new ApiKeyCache({
      findApiKeyByHash: async (hash) => {
        lookups.keys++
        return identities.get(hash) ?? null
      },
    }),
    bodyBudgetBytes: options.bodyBudgetBytes ?? 256 * 1024 * 1024,
    bodyIdleTimeoutMs: options.bodyIdleTimeoutMs,
    authFailures: options.authFailures,
    management,
  })

  /** A chat request to the app in process, with `secret` as its key (none when null). */
  const chat = (secret: string | null, body: BodyInit = JSON.stringify(chatRequest())) =>
    app.handle(
      new Request('http://localhost/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
        body,
      }),
    )

  /** Serves the app on a loopback socket (port 0); `stop` ends it and its connections. */
  function listen() {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: app.fetch, maxRequestBodySize: Number.MAX_SAFE_INTEGER })
    app.server = server
    return { port: server.port!, url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) }
  }

  return { app, secrets, lookups, chat, listen, provider }
}
