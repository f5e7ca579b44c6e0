import { collectDefaultMetrics, Gauge, Registry } from 'prom-client'
import { errorCatalog, type ErrorCode } from '@nilegate/shared/errors'
import type { Catalog, CatalogModel, Deployment } from '../core/catalog'
import type { InferenceObserver } from '../core/inference'
import type { UsageEvent } from '../core/ports'
import type { CallOutcome, Router } from '../core/router'
import { CounterCells, HistogramCells, type HistogramCell, type LabelValue } from './metric-cells'

const requestSeconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
const firstTokenSeconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60]
const redisSeconds = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
const databaseSeconds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

const circuitValues = { closed: 0, half_open: 1, open: 2 } as const

/** What the usage recorder shows of its queue. */
export interface UsageQueue {
  readonly pending: number
  readonly oldestPendingAtMs: number | null
  readonly full?: boolean
}

export interface GatewayMetricsOptions {
  /** Adds prom-client's process metrics (CPU, memory, open files, event loop lag). */
  processMetrics?: boolean
  now?: () => number
}

/**
 * The gateway's metrics, in Prometheus text through prom-client. Counters and histograms the hot
 * path moves are `CellFamily` series, found once per label set and kept; gauges are read from their
 * sources when scraped. Labels are bounded: routes are route patterns (`unmatched` for paths of
 * none), models are catalog ids (`other` for a name the catalog lacks), deployments are the
 * catalog's, codes the error catalog's; no key, organization, project or request id is a label.
 */
export class GatewayMetrics implements InferenceObserver {
  readonly registry = new Registry()
  private readonly now: () => number
  private readonly requests = new CounterCells('nilegate_http_requests_total', 'HTTP requests by route pattern, method, model, status and error code (empty when none). A stream counts once, when it ends, with the status its usage was recorded with.', ['route', 'method', 'model', 'status', 'code'])
  private readonly durations = new HistogramCells('nilegate_http_request_duration_seconds', 'Time from a request arriving to its answer (a stream: to its end), by route pattern and model.', ['route', 'model'], requestSeconds)
  private readonly firstTokens = new HistogramCells('nilegate_time_to_first_token_seconds', "Time from a streamed request arriving to its first chunk from the upstream, by model.", ['model'], firstTokenSeconds)
  private readonly tokens = new CounterCells('nilegate_tokens_total', 'Tokens billed, by model and kind (prompt or completion).', ['model', 'kind'])
  private readonly billed = new CounterCells('nilegate_billed_micro_egp_total', 'Micro-EGP billed (1 EGP = 1,000,000), by model.', ['model'])
  private readonly admissions = new CounterCells('nilegate_admissions_total', 'Admissions by model and outcome: admitted, or the refusal code (429 rate_limit_exceeded, 402 codes, 503 service_unavailable) with its status.', ['model', 'outcome', 'status'])
  private readonly upstreamCalls = new CounterCells('nilegate_upstream_calls_total', "Calls to deployments by model, deployment and outcome: success, failure (counts towards the circuit) or neutral (the client's mistake or its going away).", ['model', 'deployment', 'outcome'])
  private readonly redisCommands = new HistogramCells('nilegate_redis_command_duration_seconds', 'Redis round trips (node-redis commands, from sent to answered), by command.', ['command'], redisSeconds, 100)
  private readonly redisFailures = new CounterCells('nilegate_redis_command_failures_total', 'Redis commands that failed (unreachable, refused, error replies), by command.', ['command'], 100)
  private readonly databaseCalls = new HistogramCells('nilegate_database_call_duration_seconds', 'Database round trips by operation (a repository call: one or a few statements).', ['operation'], databaseSeconds, 200)
  private readonly databaseFailures = new CounterCells('nilegate_database_call_failures_total', 'Database calls that failed, by operation.', ['operation'], 200)
  /** Requests arrived and not yet answered (streams: not yet ended). */
  requestsInFlight = 0
  /** Streams being relayed. */
  streamsInFlight = 0

  constructor(options: GatewayMetricsOptions = {}) {
    this.now = options.now ?? Date.now
    for (const family of [this.requests, this.durations, this.firstTokens, this.tokens, this.billed, this.admissions, this.upstreamCalls, this.redisCommands, this.redisFailures, this.databaseCalls, this.databaseFailures]) family.register(this.registry)
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read())
        },
      })
    gauge('nilegate_http_requests_in_flight', 'Requests arrived and not yet answered, streams until they end.', () => this.requestsInFlight)
    gauge('nilegate_streams_in_flight', 'Streamed chat completions being relayed.', () => this.streamsInFlight)
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry })
  }

  /** The Content-Type of `text()`. */
  get contentType(): string {
    return this.registry.contentType
  }

  /** Every metric in Prometheus text format. */
  text(): Promise<string> {
    return this.registry.metrics()
  }

  /** The series of an answered request (a stream's when it ended), with its usage when it has one. */
  requestEnded(route: string, method: string, model: string, status: number, code: string, seconds: number, firstTokenSeconds: number | null, usage: UsageEvent | null): void {
    this.requests.cell(route, method, model, status, code).value++
    this.durations.cell(route, model).observe(seconds)
    if (firstTokenSeconds !== null) this.firstTokens.cell(model).observe(firstTokenSeconds)
    if (usage === null) return
    if (usage.promptTokens > 0) this.tokens.cell(model, 'prompt').value += usage.promptTokens
    if (usage.completionTokens > 0) this.tokens.cell(model, 'completion').value += usage.completionTokens
    if (usage.costMicros > 0n) this.billed.cell(model).value += Number(usage.costMicros)
  }

  admission(model: CatalogModel, refusal: ErrorCode | null): void {
    if (refusal === null) this.admissions.cell(model.id, 'admitted', '').value++
    else this.admissions.cell(model.id, refusal, errorCatalog[refusal].status).value++
  }

  upstreamCall(model: CatalogModel, deployment: Deployment, outcome: CallOutcome): void {
    this.upstreamCalls.cell(model.id, deployment.id, outcome).value++
  }

  /** A Redis round trip's series for `command`; observe seconds on it, and count failures with `redisFailed`. */
  redisCommand(command: string): HistogramCell {
    return this.redisCommands.cell(command)
  }

  redisFailed(command: string): void {
    this.redisFailures.cell(command).value++
  }

  /** A database operation's series; observe seconds on it, and count failures with `databaseFailed`. */
  databaseCall(operation: string): HistogramCell {
    return this.databaseCalls.cell(operation)
  }

  databaseFailed(operation: LabelValue): void {
    this.databaseFailures.cell(operation).value++
  }

  /**
   * Adds the deployments' circuit states and calls in flight, read from `router` over the live
   * models of `catalog` when scraped.
   */
  watchRouting(catalog: Catalog, router: Router): void {
    const deployments = () => catalog.models.filter((model) => model.status === 'live').flatMap((model) => model.deployments.map((deployment) => ({ model: model.id, deployment })))
    new Gauge({
      name: 'nilegate_circuit_state',
      help: "A deployment's circuit: 0 closed (serving), 1 half-open (one trial request let through), 2 open (refusing until its cooldown ends).",
      labelNames: ['model', 'deployment'],
      registers: [this.registry],
      collect() {
        this.reset()
        for (const { model, deployment } of deployments()) this.set({ model, deployment: deployment.id }, circuitValues[router.circuit(deployment)])
      },
    })
    new Gauge({
      name: 'nilegate_upstream_in_flight',
      help: 'Calls to a deployment in flight.',
      labelNames: ['model', 'deployment'],
      registers: [this.registry],
      collect() {
        this.reset()
        for (const { model, deployment } of deployments()) this.set({ model, deployment: deployment.id }, router.inFlight(deployment))
      },
    })
  }

  /** Adds the usage rows waiting to be written to the ledger, and how long the oldest has waited. */
  watchUsage(queue: UsageQueue): void {
    const now = this.now
    new Gauge({
      name: 'nilegate_usage_rows_queued',
      help: 'Usage rows waiting to be written to the ledger.',
      registers: [this.registry],
      collect() {
        this.set(queue.pending)
      },
    })
    new Gauge({
      name: 'nilegate_usage_write_lag_seconds',
      help: 'How long the oldest usage row waiting to be written has waited since its request ended (0 when none waits).',
      registers: [this.registry],
      collect() {
        const oldest = queue.oldestPendingAtMs
        this.set(oldest === null ? 0 : Math.max(0, now() - oldest) / 1000)
      },
    })
    new Gauge({
      name: 'nilegate_usage_refusing',
      help: '1 while so many usage rows wait that new requests are refused with 503.',
      registers: [this.registry],
      collect() {
        this.set(queue.full ? 1 : 0)
      },
    })
  }
}
