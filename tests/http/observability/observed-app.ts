import { hashApiKey } from '../../../server/core/api-keys'
import { ApiKeyCache } from '../../../server/core/authenticate'
import { Catalog, type CatalogModel, type Deployment } from '../../../server/core/catalog'
import type { ApiKeyIdentity, Provider, UsageEvent } from '../../../server/core/ports'
import { Router } from '../../../server/core/router'
import { loadCatalogFile } from '../../../server/catalog-file'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { buildApp } from '../../../server/http/app'
import { GatewayMetrics } from '../../../server/observability/gateway-metrics'
import type { LogLevel } from '../../../server/observability/log-level'
import { createLogger, type LogOutput } from '../../../server/observability/logger'
import { hasServingDeployment, Readiness, type ReadinessOptions } from '../../../server/observability/readiness'
import { RequestObserver } from '../../../server/observability/request-record'
import { unavailableManagement } from '../../support/management-app'
import { demoCatalogPath, keyIdentity, ScriptedProvider } from '../../support/test-app'

/** A log output that keeps what is written, line by line. */
export class CapturedOutput implements LogOutput {
  text = ''

  write(text: string): void {
    this.text += text
  }

  async flush(): Promise<void> {}

  /** The JSON lines written so far. */
  get lines(): Array<Record<string, unknown>> {
    return this.text
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
  }

  /** The request lines written so far. */
  get requests(): Array<Record<string, unknown>> {
    return this.lines.filter((line) => line.msg === 'request')
  }
}

export interface ObservedAppOptions {
  logLevel?: LogLevel
  /** False for METRICS=off. */
  metrics?: boolean
  metricsToken?: string | null
  balanceMicros?: bigint
  identity?: Partial<ApiKeyIdentity>
  /** Readiness checks other than the app's own deployments check; none (ready) when absent. */
  readiness?: Partial<Pick<ReadinessOptions, 'database' | 'redis' | 'timeoutMs' | 'maxAgeMs'>>
  /** The catalog's models (the demo catalog's when absent) and their providers (the scripted one). */
  models?: CatalogModel[]
  providerFor?: (deployment: Deployment) => Provider
}

/**
 * The gateway's app as `server/main.ts` observes it (a request observer writing to a captured
 * output, metrics, readiness) over a scripted provider, the demo catalog and an in-memory key.
 */
export async function observedApp(options: ObservedAppOptions = {}) {
  const secret = `sk-observed${'y'.repeat(40)}`
  const provider = new ScriptedProvider()
  const catalog = new Catalog(options.models ?? (await loadCatalogFile(demoCatalogPath)))
  const router = new Router()
  const usage: UsageEvent[] = []
  const output = new CapturedOutput()
  const logger = createLogger(options.logLevel ?? 'info', output)
  const metrics = options.metrics === false ? null : new GatewayMetrics()
  metrics?.watchRouting(catalog, router)
  const readiness = new Readiness({
    database: options.readiness?.database ?? (async () => {}),
    redis: options.readiness?.redis,
    deployments: () => hasServingDeployment(catalog, router),
    timeoutMs: options.readiness?.timeoutMs,
    maxAgeMs: options.readiness?.maxAgeMs ?? 0,
  })
  const identity = keyIdentity(options.identity)
  const app = buildApp({
    catalog,
    router,
    providerFor: options.providerFor ?? (() => provider),
    usage: { record: (event) => usage.push(event) },
    admission: new InProcessAdmissionStore(),
    ledger: { readCounters: async (_orgId, month) => ({ month, balanceMicros: options.balanceMicros ?? 1_000_000_000_000n, keySpend: new Map(), projectSpend: new Map(), recordedIds: [] }) },
    log: () => {},
    observer: metrics ?? undefined,
    keys: new ApiKeyCache({ findApiKeyByHash: async (hash) => (hash === hashApiKey(secret) ? identity : null) }),
    bodyBudgetBytes: 256 * 1024 * 1024,
    management: unavailableManagement(),
    observability: {
      requests: new RequestObserver({ catalog, metrics, logger, output }),
      metrics,
      metricsToken: options.metricsToken ?? null,
      readiness,
      log: (message, error) => logger.error({ err: error }, message),
    },
  })
  const send = (method: string, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) =>
    app.handle(
      new Request(`http://localhost${path}`, {
        method,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...init.headers },
      }),
    )
  /** The value of one series of GET /metrics, 0 when it is not there. */
  const metricValue = async (series: string) => {
    const text = (await metrics?.text()) ?? ''
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
    return line === undefined ? 0 : Number(line.slice(series.length + 1))
  }
  return { app, secret, provider, catalog, router, usage, output, logger, metrics, readiness, identity, send, metricValue }
}
