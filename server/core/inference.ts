import { GatewayError, type ErrorCode } from '@nilegate/shared/errors'
import { longestRequestMs, type Catalog, type CatalogModel, type Deployment } from './catalog'
import { admitLoaded, defaultLoadFenceMs, refusalError, type AdmissionStore, type Admitted, type LedgerCounters } from './admission'
import { answerWithin, NoAnswerInTime } from './answer-within'
import { billWithinHold, insufficientBalanceMessage, type HoldBound } from './hold-bound'
import type { LateUsageFollowUp } from './late-usage'
import type { ApiKeyIdentity, LedgerReader, Provider, ProviderCall, UsageEvent, UsageSink } from './ports'
import { effectiveRpmLimit } from './rate-limits'
import { resolveModel } from './resolve-model'
import { defaultRouter, isUpstreamFailure, type CallOutcome, type Router } from './router'
import { settlementsFor, type Settlements } from './settlements'

/** What the inference use cases need from the outside world. */
export interface InferenceDeps {
  catalog: Catalog
  providerFor: (deployment: Deployment) => Provider
  usage: UsageSink
  admission: AdmissionStore
  ledger: LedgerReader
  /** Chooses deployments and keeps their health; defaults to one per catalog. */
  router?: Router
  now?: () => number
  /** Where failures that no client sees are reported. */
  log?: (message: string, error?: unknown) => void
  /** How long a hold outlives the longest request before it is released on its own; 60 s when absent. */
  reservationMarginMs?: number
  /** Settles admitted requests; one per admission store when absent. */
  settlements?: Settlements
  /**
   * How long an admission waits for the ledger when it has to load an organization's counters
   * before refusing with 503; 5 s when absent. The read goes on for the requests after it.
   */
  ledgerTimeoutMs?: number
  /** Follows up the rebuilds of a shared store's counters (absent for a store only this process uses). */
  lateUsage?: LateUsageFollowUp
  /** Counts admissions and upstream calls (metrics); nothing counts them when absent. */
  observer?: InferenceObserver
}

/** Counts what inference calls do, for the metrics. Runs on the hot path: each call must be cheap. */
export interface InferenceObserver {
  /** An admission's outcome: admitted (null), refused with a 429 or 402 code, or not made (503). */
  admission(model: CatalogModel, refusal: ErrorCode | null): void
  /** A call to a deployment ended, with the outcome its circuit was told. */
  upstreamCall(model: CatalogModel, deployment: Deployment, outcome: CallOutcome): void
}

const defaultLedgerTimeoutMs = 5_000

function billingUnavailable(): GatewayError {
  return new GatewayError('service_unavailable', 'Billing is temporarily unavailable. Retry in 30 to 60 seconds.')
}

/** One authenticated inference request. */
export interface InferenceRequest {
  requestId: string
  identity: ApiKeyIdentity
  /** Aborts when the client goes away. */
  signal: AbortSignal
  startedAtMs: number
  /** Filled in on admission, for the X-RateLimit-* headers. */
  rateLimit?: { limit: number; remaining: number; resetMs: number }
  /** The model the request resolved to, for headers that depend on it (a scheduled retirement). */
  model?: CatalogModel
  /** The deployment that served the request (the last one tried), once routed. */
  deployment?: Deployment
  /** The request's usage row, once recorded. */
  usage?: UsageEvent
  /** `performance.now()` when a stream's first chunk arrived from the upstream. */
  firstChunkAt?: number
  /** The error a stream ended with after it began, if it did. */
  streamError?: GatewayError
  /** Called once the request's usage is recorded (`InferenceCall.record`), with its row. */
  onRecord?: (event: UsageEvent) => void
  /** The W3C trace the request continues, passed to its upstream calls. */
  trace?: { traceId: string; traceparent: string }
}

/** A hold outlives the longest request by this much before it is released on its own. */
const defaultReservationMarginMs = 60_000

/** A request bound to its model, routed to a deployment, able to record its usage once. */
export class InferenceCall {
  readonly model: CatalogModel
  /** The deployment serving the request (the last one tried), once routed. */
  deployment: Deployment | null = null
  private readonly router: Router
  /** The deployment whose call is still running after `route` returned (a stream being relayed). */
  private held: Deployment | null = null
  private recorded = false
  private admitted: Admitted | null = null
  /** What admission held: the most the request is billed. */
  private hold: HoldBound | null = null

  constructor(
    private readonly deps: InferenceDeps,
    private readonly request: InferenceRequest,
    modelId: string,
    private readonly endpoint: UsageEvent['endpoint'],
    private readonly stream: boolean,
  ) {
    this.model = resolveModel(deps.catalog, modelId, endpoint === 'embeddings' ? 'embeddings' : 'chat', request.identity)
    request.model = this.model
    this.router = deps.router ?? defaultRouter(deps.catalog)
  }

  /**
   * Calls `attempt` on a deployment the router picks; on upstream trouble, tries another deployment
   * (each at most once), since nothing reached the client yet. The client's own mistakes and its
   * going away are not retried. With `hold`, the deployment stays in flight until `finish`.
   */
  async route<T>(attempt: (provider: Provider, providerCall: ProviderCall) => Promise<T>, { hold = false } = {}): Promise<T> {
    const tried = new Set<string>()
    let lastFailure: unknown = null
    for (;;) {
      let deployment: Deployment
      try {
        deployment = this.router.pick(this.model, tried, this.request.identity.requiresRegion)
      } catch (error) {
        throw lastFailure ?? error
      }
      tried.add(deployment.id)
      this.deployment = deployment
      this.request.deployment = deployment
      this.router.acquire(deployment)
      try {
        const providerCall: ProviderCall = { requestId: this.request.requestId, signal: this.request.signal, model: this.model, deployment }
        if (this.request.trace) providerCall.traceparent = this.request.trace.traceparent
        const result = await attempt(this.deps.providerFor(deployment), providerCall)
        if (hold) this.held = deployment
        else this.release(deployment, 'success')
        return result
      } catch (error) {
        const upstreamFailed = !this.clientGone && isUpstreamFailure(error)
        this.release(deployment, upstreamFailed ? 'failure' : 'neutral')
        if (!upstreamFailed) throw error
        lastFailure = error
      }
    }
  }

  private release(deployment: Deployment, outcome: CallOutcome): void {
    this.router.release(deployment, outcome)
    this.deps.observer?.upstreamCall(this.model, deployment, outcome)
  }

  /** Ends the held call of `route({ hold: true })`, telling the router how it went. */
  finish(error?: unknown): void {
    if (!this.held) return
    const outcome = this.clientGone ? 'neutral' : error === undefined ? 'success' : isUpstreamFailure(error) ? 'failure' : 'neutral'
    this.release(this.held, outcome)
    this.held = null
  }

  /**
   * Checks the key's RPM window and holds the most the request can cost (`hold`, hold-bound.ts)
   * against the balance and the monthly caps, in one atomic call (I1); refuses with 429 or 402
   * otherwise. Settled by `record`, which bills no more than the hold.
   */
  async admit(hold: HoldBound): Promise<void> {
    try {
      await this.admitWithin(hold)
    } catch (error) {
      this.deps.observer?.admission(this.model, error instanceof GatewayError ? error.code : 'internal_error')
      throw error
    }
    this.deps.observer?.admission(this.model, null)
  }

  private async admitWithin(hold: HoldBound): Promise<void> {
    // The rows of requests served now could not be written either: refuse rather than grow the backlog.
    if (this.deps.usage.full) throw new GatewayError('service_unavailable', 'Usage records cannot be written at the moment. Retry in 30 to 60 seconds.')
    const { identity, requestId } = this.request
    const now = this.deps.now ?? Date.now
    const readLedger = async (orgId: string, month: string, requestIds: readonly string[]) => {
      try {
        // Usage rows still queued here are debits the ledger does not show yet: written first, or
        // the rebuilt balance would hand their cost out again (a Redis that lost its data). Those
        // other gateways still hold are found later by the late-usage follow-up. A database that
        // accepts connections and drops them can leave a read pending for good: it is given up
        // with the rebuild's fence, after which it could not load anyway.
        await this.deps.usage.flush?.()
        return await answerWithin(this.deps.ledger.readCounters(orgId, month, identity.billingTimeZone, requestIds), Math.max(defaultLoadFenceMs, this.ledgerWaitMs), 'the database')
      } catch (error) {
        // Without the ledger the balance is unknown: refuse rather than serve unbilled (fail closed).
        ;(this.deps.log ?? console.error)(`reading the ledger of ${orgId} failed`, error)
        throw billingUnavailable()
      }
    }
    let result: Awaited<ReturnType<typeof admitLoaded>>
    try {
      result = await admitLoaded(
        this.deps.admission,
        {
          requestId,
          orgId: identity.orgId,
          keyId: identity.keyId,
          projectId: identity.projectId,
          rpmLimit: effectiveRpmLimit(identity),
          worstCaseMicros: hold.micros,
          keyCapMicros: identity.keyMonthlyCapMicros,
          projectCapMicros: identity.projectMonthlyCapMicros,
          nowMs: now(),
          // The hold is taken once before routing, so it must outlive a failover through every deployment.
          reservationTtlMs: longestRequestMs(this.model) + (this.deps.reservationMarginMs ?? defaultReservationMarginMs),
          timeZone: identity.billingTimeZone,
        },
        readLedger,
        {
          now,
          loaded: this.deps.lateUsage && ((read, readAtMs, loadToken) => this.followLoad(read, readAtMs, loadToken)),
          // The rebuild this request started or joined goes on after it gives up, for the requests after it.
          waitMs: this.ledgerWaitMs,
        },
      )
    } catch (error) {
      throw error instanceof NoAnswerInTime ? billingUnavailable() : error
    }
    if (!result.admitted) {
      throw result.reason === 'insufficient_balance' ? new GatewayError('insufficient_balance', insufficientBalanceMessage(hold)) : refusalError(result)
    }
    this.admitted = result
    this.hold = { ...hold, micros: result.reservedMicros }
    this.request.rateLimit = { limit: result.limit, remaining: result.remaining, resetMs: result.resetMs }
  }

  private get ledgerWaitMs(): number {
    return this.deps.ledgerTimeoutMs ?? defaultLedgerTimeoutMs
  }

  private followLoad(read: LedgerCounters, readAtMs: number, loadToken: string): void {
    if (read.snapshot === undefined) return
    const { orgId, billingTimeZone } = this.request.identity
    this.deps.lateUsage?.follow({ orgId, month: read.month, timeZone: billingTimeZone, snapshot: read.snapshot, readAtMs, loadToken })
  }

  get clientGone(): boolean {
    return this.request.signal.aborted
  }

  /**
   * Settles the request's hold and records its usage and cost (I2); later calls are ignored, so
   * every exit path may call it. An admitted request is billed no more than its hold: usage reported
   * beyond it (an upstream that miscounts) goes on the usage row as unbilled, for operators, and is
   * never debited, so no balance or cap goes below zero. The usage row is queued once the store
   * has answered the settlement (see `Settlements`). Returns the cost billed.
   */
  record(status: number, promptTokens: number, completionTokens: number): bigint {
    if (this.recorded) return 0n
    this.recorded = true
    const now = this.deps.now ?? Date.now
    const billed = billWithinHold(this.hold, promptTokens, completionTokens, this.model)
    const cost = billed.costMicros
    const { identity, requestId, startedAtMs } = this.request
    const nowMs = now()
    const event: UsageEvent = {
      requestId,
      keyId: identity.keyId,
      orgId: identity.orgId,
      projectId: identity.projectId,
      model: this.model.id,
      endpoint: this.endpoint,
      stream: this.stream,
      promptTokens: billed.promptTokens,
      completionTokens: billed.completionTokens,
      costMicros: cost,
      ...(billed.unbilledMicros > 0n ? { unbilled: { promptTokens: billed.unbilledPromptTokens, completionTokens: billed.unbilledCompletionTokens, micros: billed.unbilledMicros } } : {}),
      status,
      latencyMs: Math.max(0, Math.round(nowMs - startedAtMs)),
      region: this.deployment?.region ?? null,
      createdAt: new Date(startedAtMs),
    }
    this.request.usage = event
    this.request.onRecord?.(event)
    const usage = this.deps.usage
    if (!this.admitted) {
      usage.record(event)
      return cost
    }
    const settlement = { requestId, orgId: identity.orgId, keyId: identity.keyId, projectId: identity.projectId, month: this.admitted.month, costMicros: cost, nowMs }
    ;(this.deps.settlements ?? settlementsFor(this.deps.admission)).settle(settlement, () => usage.record(event))
    return cost
  }

  /** Records a failure before any token was produced and passes the error on. */
  fail(error: unknown): never {
    this.record(this.clientGone ? 499 : error instanceof GatewayError ? error.status : 500, 0, 0)
    throw error
  }
}
