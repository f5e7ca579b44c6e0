import { GatewayError } from '@nilegate/shared/errors'
import type { Catalog, CatalogModel, Deployment } from './catalog'
import { costMicros } from './money'
import { admitLoaded, refusalError, type AdmissionStore, type Admitted } from './admission'
import type { ApiKeyIdentity, LedgerReader, Provider, ProviderCall, UsageEvent, UsageSink } from './ports'
import { effectiveRpmLimit } from './rate-limits'
import { pickDeployment, resolveModel } from './resolve-model'

/** What the inference use cases need from the outside world. */
export interface InferenceDeps {
  catalog: Catalog
  providerFor: (deployment: Deployment) => Provider
  usage: UsageSink
  admission: AdmissionStore
  ledger: LedgerReader
  now?: () => number
  /** Where failures that no client sees are reported. */
  log?: (message: string, error?: unknown) => void
}

/** One authenticated inference request. */
export interface InferenceRequest {
  requestId: string
  identity: ApiKeyIdentity
  /** Aborts when the client goes away. */
  signal: AbortSignal
  startedAtMs: number
  /** Filled in on admission, for the X-RateLimit-* headers. */
  rateLimit?: { limit: number; remaining: number }
}

/** A hold outlives the longest request by this much before it is released on its own. */
const reservationMarginMs = 60_000

/** A request bound to its model, deployment and provider, able to record its usage once. */
export class InferenceCall {
  readonly model: CatalogModel
  readonly deployment: Deployment
  readonly provider: Provider
  readonly providerCall: ProviderCall
  private recorded = false
  private admitted: Admitted | null = null

  constructor(
    private readonly deps: InferenceDeps,
    private readonly request: InferenceRequest,
    modelId: string,
    private readonly endpoint: UsageEvent['endpoint'],
    private readonly stream: boolean,
  ) {
    this.model = resolveModel(deps.catalog, modelId, endpoint === 'embeddings' ? 'embeddings' : 'chat')
    this.deployment = pickDeployment(this.model)
    this.provider = deps.providerFor(this.deployment)
    this.providerCall = { requestId: request.requestId, signal: request.signal, model: this.model, deployment: this.deployment }
  }

  /**
   * Checks the key's RPM window and holds the worst-case cost against the balance and the monthly
   * caps, in one atomic call (I1); refuses with 429 or 402 otherwise. Settled by `record`.
   */
  async admit(worstCasePromptTokens: number, worstCaseCompletionTokens: number): Promise<void> {
    const { identity, requestId } = this.request
    const now = this.deps.now ?? Date.now
    const result = await admitLoaded(
      this.deps.admission,
      {
        requestId,
        orgId: identity.orgId,
        keyId: identity.keyId,
        projectId: identity.projectId,
        rpmLimit: effectiveRpmLimit(identity),
        worstCaseMicros: costMicros(worstCasePromptTokens, worstCaseCompletionTokens, this.model.inputPriceMicrosPerM, this.model.outputPriceMicrosPerM),
        keyCapMicros: identity.keyMonthlyCapMicros,
        projectCapMicros: identity.projectMonthlyCapMicros,
        nowMs: now(),
        reservationTtlMs: this.deployment.timeouts.totalMs + reservationMarginMs,
        timeZone: identity.billingTimeZone,
      },
      (orgId, month) =>
        this.deps.ledger.readCounters(orgId, month, identity.billingTimeZone).catch((error: unknown) => {
          // Without the ledger the balance is unknown: refuse rather than serve unbilled (fail closed).
          ;(this.deps.log ?? console.error)(`reading the ledger of ${orgId} failed`, error)
          throw new GatewayError('service_unavailable', 'Billing is temporarily unavailable. Retry in 30 to 60 seconds.')
        }),
    )
    if (!result.admitted) throw refusalError(result)
    this.admitted = result
    this.request.rateLimit = { limit: result.limit, remaining: result.remaining }
  }

  get clientGone(): boolean {
    return this.request.signal.aborted
  }

  /**
   * Records the request's usage and cost and settles its hold (I2); later calls are ignored, so
   * every exit path may call it.
   */
  record(status: number, promptTokens: number, completionTokens: number): bigint {
    if (this.recorded) return 0n
    this.recorded = true
    const now = this.deps.now ?? Date.now
    const cost = costMicros(promptTokens, completionTokens, this.model.inputPriceMicrosPerM, this.model.outputPriceMicrosPerM)
    const { identity, requestId, startedAtMs } = this.request
    this.deps.usage.record({
      requestId,
      keyId: identity.keyId,
      orgId: identity.orgId,
      projectId: identity.projectId,
      model: this.model.id,
      endpoint: this.endpoint,
      stream: this.stream,
      promptTokens,
      completionTokens,
      costMicros: cost,
      status,
      latencyMs: Math.max(0, Math.round(now() - startedAtMs)),
      region: this.deployment.region,
      createdAt: new Date(startedAtMs),
    })
    if (this.admitted) this.settle(cost, now())
    return cost
  }

  /**
   * Debits the actual cost and releases the hold, off the response path. Should the store be
   * unreachable, the hold expires on its own and the usage row still records the debit, so counters
   * rebuilt from the ledger include it.
   */
  private settle(cost: bigint, nowMs: number): void {
    const { identity, requestId } = this.request
    const month = this.admitted!.month
    this.deps.admission
      .settle({ requestId, orgId: identity.orgId, keyId: identity.keyId, projectId: identity.projectId, month, costMicros: cost, nowMs })
      .catch((error: unknown) => (this.deps.log ?? console.error)(`settling ${requestId} failed; its hold expires on its own and its usage row keeps the debit`, error))
  }

  /** Records a failure before any token was produced and passes the error on. */
  fail(error: unknown): never {
    this.record(this.clientGone ? 499 : error instanceof GatewayError ? error.status : 500, 0, 0)
    throw error
  }
}
