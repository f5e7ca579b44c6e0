import { Catalog } from './core/catalog'
import { ApiKeyCache } from './core/authenticate'
import { AddressList } from './core/client-ip'
import { JoinedChangeBus, LocalChangeBus } from './core/governance/changes'
import { governanceWithDeadline, storeWithDeadline } from './core/governance/deadline'
import { followDeployments } from './core/governance/deployments'
import { followRetirements, setOperatorFlag } from './core/governance/operator'
import { HealthProbes } from './core/health-probes'
import { LateUsageFollowUp, lookbackFor } from './core/late-usage'
import { InProcessLoginLimiter } from './core/login-limiter'
import { formatEgp } from './core/money'
import { PeriodicReconciler } from './core/periodic-reconciler'
import { Router } from './core/router'
import { Settlements } from './core/settlements'
import { UsageRecorder } from './core/usage-recorder'
import { InProcessAdmissionStore } from './adapters/in-process/admission-store'
import { OutboxMailer } from './adapters/mail/outbox-mailer'
import { createProviderRegistry } from './adapters/providers'
import { probeDeployment } from './adapters/providers/probe-deployment'
import { PostgresChangeBus } from './adapters/postgres/change-bus'
import { openDatabase, type GatewayDatabase } from './adapters/postgres/database'
import { openDatabaseInWorker } from './adapters/postgres/worker-database'
import { acquireInstanceLock } from './adapters/postgres/instance-lock'
import { demoCatalogPath, followCatalogFile, readCatalogFile } from './catalog-file'
import { listenFailure, loadConfig, upstreamFetchBudget, wantsDemoTenant } from './config'
import { startControlSocket } from './control-socket'
import { acquireDataDirLock, DataDirLockedError } from './data-dir-lock'
import { buildApp } from './http/app'
import { GatewayMetrics } from './observability/gateway-metrics'
import { createLogger, logAt, loggableError, routeConsoleTo, stdoutOutput } from './observability/logger'
import { hasServingDeployment, Readiness } from './observability/readiness'
import { RequestObserver } from './observability/request-record'
import { timeDatabase, timeRedisCommands } from './observability/round-trips'

// Everything the gateway prints to standard output goes through one output, so that no line is cut
// by another: the log's JSON lines (LOG_LEVEL), and the lines printed for people (the listening
// line, a demo key, mail without SMTP), which are printed whatever the level.
const output = stdoutOutput()
const print = (text: string) => output.write(`${text}\n`)

/** Ends the process once what was written has left it. */
async function exit(code: number): Promise<never> {
  await Promise.race([output.flush(), Bun.sleep(2_000)])
  process.exit(code)
}

/**
 * Runs a step of start-up; when it fails, the gateway exits with one line on standard error naming
 * the step and its error, which is what an operator needs of a bad setting or an unreachable
 * server, not a trace.
 */
async function startUp<T>(step: string, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    process.stderr.write(`nilegate did not start: ${step}: ${error instanceof Error ? error.message : String(error)}\n`)
    return exit(1)
  }
}

const config = await startUp('reading the environment', () => loadConfig(Bun.env))
const logger = createLogger(config.logLevel, output)
// What modules print with console (a catalog reload, a failed invitation) becomes log events too.
routeConsoleTo(logger)
const events = (event: string) => logger.child({ event })
const metrics = config.metrics ? new GatewayMetrics({ processMetrics: true }) : null
if (metrics) timeRedisCommands(metrics)
const trustedProxies = await startUp('reading TRUSTED_PROXIES', () => new AddressList(config.trustedProxies))
const catalogPath = config.catalogPath ?? demoCatalogPath
const catalogFile = await startUp('reading the catalog', () => readCatalogFile(catalogPath))
const catalog = new Catalog(catalogFile.models, catalogFile.settings)
const embedded = config.databaseUrl === null
function lockDataDir() {
  try {
    return acquireDataDirLock(config.dataDir)
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error
    process.stderr.write(`${error.message}\n`)
    return null
  }
}
const lock = embedded ? lockDataDir() : null
if (embedded && lock === null) await exit(1)
const databaseLog = logAt(events('database'), 'error')
// PGlite runs queries synchronously on its thread: embedded, it gets a thread of its own.
const openedDatabase = await startUp<GatewayDatabase>(embedded ? `opening the embedded database in ${config.dataDir}` : 'opening the Postgres database of DATABASE_URL', () =>
  embedded ? openDatabaseInWorker({ dataDir: config.dataDir, log: databaseLog }) : openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log: databaseLog }),
)
const database = metrics ? timeDatabase(openedDatabase, metrics) : openedDatabase
// Until the server runs, an instance that loses its lock to another has nothing to finish.
let stopForLostLock: () => void = () => void exit(1)
// Without REDIS_URL this instance keeps every rate window and balance in memory: it must be the only
// one on its Postgres database, or each instance would admit up to the full limits (see instance-lock.ts).
const instanceLock = embedded
  ? null
  : await startUp(`taking the instance lock on the Postgres database of DATABASE_URL`, () =>
      acquireInstanceLock(config.databaseUrl!, config.redisUrl ? 'shared' : 'sole', {
        log: { error: logAt(events('instance_lock'), 'warn') },
        onLost(error) {
          events('instance_lock').fatal(`nilegate is stopping: it lost its instance lock on Postgres and ${error.message}`)
          stopForLostLock()
        },
      }),
    )
const usage = new UsageRecorder(database.usage, { flushMs: config.usageFlushMs, maxPending: config.usageMaxPending, log: logAt(events('usage'), 'warn') })
metrics?.watchUsage(usage)
// Redis's parts and its client, loaded only when there is a Redis (instance.ts says why).
const redisParts = config.redisUrl ? await import('./adapters/redis/instance') : null
const redis = redisParts ? { ...redisParts, client: await startUp('reading REDIS_URL', () => redisParts.connectRedis(config.redisUrl!, { log: logAt(events('redis'), 'warn') })) } : null
async function openAdmissionStore() {
  if (!redis) return new InProcessAdmissionStore()
  await redis.waitForRedis(redis.client, 10_000)
  const store = new redis.RedisAdmissionStore(redis.client, { leaseMs: config.admissionLeaseMs })
  await store.loadScripts()
  return store
}
const admission = await startUp('connecting to the Redis of REDIS_URL', openAdmissionStore)
const settlements = new Settlements(admission, { log: logAt(events('settlement'), 'error') })
// Counters Redis lost are rebuilt from the ledger; rows other instances were still writing then
// are debited by a follow-up.
const lateUsage = redis ? new LateUsageFollowUp(admission, database.ledger, { lookbackMs: () => lookbackFor(catalog.longestRequestMs), log: logAt(events('reconcile'), 'warn') }) : undefined
// Revokes, suspensions and other changes reach every instance's caches through Redis when there is
// one; Postgres announces changes too (its triggers), those made by hand in SQL included. The
// embedded database has one process, which makes every change.
const changesLog = logAt(events('changes'), 'warn')
const redisChanges = redis ? new redis.RedisChangeBus(redis.client, { log: changesLog }) : null
const databaseChanges = config.databaseUrl !== null ? new PostgresChangeBus(config.databaseUrl, { log: changesLog }) : null
const changes =
  redisChanges && databaseChanges ? new JoinedChangeBus(redisChanges, databaseChanges) : (redisChanges ?? databaseChanges ?? new LocalChangeBus({ soleWriter: true }))
const keys = new ApiKeyCache(database.identities, { log: logAt(events('keys'), 'error') })
keys.subscribeTo(changes)
// Operators' retirements apply over the catalog file, now and whenever any instance changes them.
await followRetirements(catalog, database.governance.operator, changes)
// Operators' deployments join the file's; SIGHUP or an operator's request re-reads the file.
await followDeployments(catalog, database.governance.deployments, changes)
const catalogReload = followCatalogFile(catalog, catalogPath, changes)
process.on('SIGHUP', () => void catalogReload.reload())
// Bun's fetch sends at most BUN_CONFIG_MAX_HTTP_REQUESTS requests at once, 256 unless set when the
// process starts (a change made from here is not read), and holds the rest without a word: a stream
// past that many would wait, its deadlines running, for another to end. The router answers 503
// engine_unavailable past the calls' share instead, and probes keep places of their own; `bun start`
// sets 8192.
const fetchBudget = upstreamFetchBudget(Bun.env.BUN_CONFIG_MAX_HTTP_REQUESTS)
const circuitLog = events('circuit')
const router = new Router({
  maxUpstreamInFlight: fetchBudget.calls,
  onCircuitChange(deployment, change, failures) {
    if (change === 'opened') circuitLog.warn({ deployment: deployment.id }, `deployment ${deployment.id} failed ${failures} calls in a row: no traffic until a trial call succeeds`)
    else circuitLog.info({ deployment: deployment.id }, `deployment ${deployment.id} answered a call again: traffic resumes`)
  },
})
metrics?.watchRouting(catalog, router)
const probes = new HealthProbes(catalog, router, { check: probeDeployment, concurrency: fetchBudget.probes, log: logAt(circuitLog, 'warn') })
probes.start()
const reconciler =
  config.reconcileIntervalS > 0
    ? new PeriodicReconciler(admission, database.ledger, () => database.listBillingAccounts(), {
        intervalMs: config.reconcileIntervalS * 1000,
        log: logAt(events('reconcile'), 'warn'),
        claimPass: redis ? redis.redisPassLease(redis.client, 'nilegate:reconcile:lease') : undefined,
      })
    : null
reconciler?.start()
// Mail is kept in the outbox table; delivered over SMTP when configured, printed otherwise.
// Its SMTP client (about 3 MiB resident) is loaded only when there is an SMTP server to send to.
const smtp = config.smtpUrl ? (await import('./adapters/mail/smtp-transport')).smtpTransport(config.smtpUrl, config.mailFrom) : null
const mailer = new OutboxMailer(database.governance.accounts, smtp, print)
// The outbox keeps no tokens; mail kept by earlier versions loses the ones it holds.
await database.governance.accounts.redactOutboxTokens()

const readinessLog = events('readiness')
const readiness = new Readiness({
  database: () => database.hasOrganizations(),
  redis: redis ? () => redis.client.ping() : undefined,
  deployments: () => hasServingDeployment(catalog, router),
  onChange(report, errors) {
    if (report.ready) readinessLog.info({ checks: report.checks }, 'ready')
    else readinessLog.warn({ checks: report.checks, errors: errors.map(loggableError) }, `not ready: ${report.reasons.join('; ')}`)
  },
})

const managementDatabaseTimeoutMs = 30_000
const app = buildApp({
  catalog,
  router,
  providerFor: createProviderRegistry(),
  usage,
  admission,
  settlements,
  ledger: database.ledger,
  lateUsage,
  keys,
  bodyBudgetBytes: config.bodyBudgetBytes,
  reservationMarginMs: config.reservationMarginMs,
  log: logAt(events('inference'), 'error'),
  observer: metrics ?? undefined,
  observability: {
    requests: new RequestObserver({ catalog, metrics, logger, output }),
    metrics,
    metricsToken: config.metricsToken,
    readiness,
    log: logAt(events('http'), 'error'),
  },
  management: {
    // A database that stops answering gets the dashboard a 503 after 30 s, not a wait without end.
    governance: governanceWithDeadline(database.governance, managementDatabaseTimeoutMs),
    // Login guards hold across instances when they share Redis; otherwise each instance keeps its own.
    loginLimiter: redis ? new redis.RedisLoginLimiter(redis.client) : new InProcessLoginLimiter(),
    trustedProxies,
    changes,
    mailer,
    publicBaseUrl: config.publicBaseUrl,
    catalog,
    admission,
    ledger: storeWithDeadline(database.ledger, managementDatabaseTimeoutMs),
  },
})
// Through Elysia's listen, Bun routes each request to its route's compiled handler (Bun.serve's
// `routes`), instead of every request going through the app's fetch and router: about 3 us less
// of the main thread a request. Paths with wildcards still take the fetch. Routes read the socket
// peer (client IP, allow-lists) through the context's `server`, which listen sets. The app enforces
// the body caps (from Content-Length before reading, and by counting chunked bodies): Bun's own cap
// is set out of reach, as it would answer a bare 413 without the error envelope or a request id.
// Another process on the same port is an error, not a share of the connections (reusePort).
await startUp(`listening on ${config.host} port ${config.port}`, () => {
  try {
    return app.listen({ hostname: config.host, port: config.port, development: false, reusePort: false, maxRequestBodySize: Number.MAX_SAFE_INTEGER, idleTimeout: 255 })
  } catch (error) {
    throw listenFailure(error, config.host, config.port)
  }
})
const server = app.server!
const baseUrl = config.publicBaseUrl ?? `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}/v1`
const control = embedded
  ? startControlSocket(config.dataDir, {
      baseUrl,
      createDemo: (options) => database.createDemoTenant(options),
      setOperator: (email, grant) => setOperatorFlag(database.governance.operator, email, grant),
      ledgerStatus: () => database.ledgerStatus(),
      retainUsage: (options) => database.retainUsage(options),
    })
  : null

if (!fetchBudget.set) {
  events('start').warn(`nilegate sends at most 256 upstream requests at once (Bun's default for fetch) and answers 503 engine_unavailable past ${fetchBudget.calls} calls. Start it with \`bun start\`, or set BUN_CONFIG_MAX_HTTP_REQUESTS (up to 65535).`)
}
// A production start prints no key: its first operator signs up and is granted by the CLI. The
// listening line comes after this decision, so whoever waits for it sees the start complete.
const demo = wantsDemoTenant(config, catalog.models) ? await startUp('creating the demo organization', () => database.seedDemoIfEmpty()) : null
events('start').info(
  { base_url: baseUrl, database: embedded ? 'pglite' : 'postgres', admission: redis ? 'redis' : 'in_process', catalog: catalogPath, models: catalog.models.length, metrics: metrics !== null },
  'started',
)
print(`nilegate listening on ${baseUrl} (${embedded ? `embedded PGlite in ${config.dataDir}` : 'Postgres'}, ${redis ? 'admission on Redis' : 'admission in process'}, catalog ${catalogPath}, ${catalog.models.length} models)`)
if (demo) {
  print(`\nA demo organization was created with ${formatEgp(demo.balanceMicros)} EGP of credit. Its API key is shown once:\n`)
  print(`  OPENAI_BASE_URL=${baseUrl}`)
  print(`  OPENAI_API_KEY=${demo.apiKey}\n`)
  print(`  curl ${baseUrl}/chat/completions -H "Authorization: Bearer ${demo.apiKey}" \\\n    -d '{"model":"${catalog.models.find((model) => model.modality === 'chat' && model.status === 'live')?.id}","messages":[{"role":"user","content":"Hello"}]}'\n`)
}

let stopping = false
async function shutdown(signal: string, exitCode = 0): Promise<void> {
  if (stopping) return
  stopping = true
  const shutdownLog = events('shutdown')
  shutdownLog.info({ signal }, `${signal}: finishing requests in flight`)
  readiness.drain()
  await server.stop(false)
  await probes.stop()
  await mailer.idle()
  smtp?.close()
  await reconciler?.stop()
  await control?.stop()
  // Usage rows are queued once their settlements are answered: those first.
  await settlements.drain()
  await usage.close()
  await lateUsage?.stop()
  redisChanges?.close()
  databaseChanges?.close()
  await redis?.client.close()
  await database.close()
  await instanceLock?.release()
  lock?.release()
  shutdownLog.info('stopped')
  await exit(exitCode)
}
stopForLostLock = () => void shutdown('instance lock lost', 1)
process.on('SIGINT', () => void shutdown('SIGINT'))
process.on('SIGTERM', () => void shutdown('SIGTERM'))
