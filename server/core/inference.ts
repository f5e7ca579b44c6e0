import { GatewayError } from '@nilegate/shared/errors'
import type { Catalog, CatalogModel, Deployment } from './catalog'
import { costMicros } from './money'
import type { ApiKeyIdentity, Provider, ProviderCall, UsageEvent, UsageSink } from './ports'
import { pickDeployment, resolveModel } from './resolve-model'

/** What the inference use cases need from the outside world. */
export interface InferenceDeps {
  catalog: Catalog
  providerFor: (deployment: Deployment) => Provider
  usage: UsageSink
  now?: () => number
}

/** One authenticated inference request. */
export interface InferenceRequest {
  requestId: string
  identity: ApiKeyIdentity
  /** Aborts when the client goes away. */
  signal: AbortSignal
  startedAtMs: number
}

/** A request bound to its model, deployment and provider, able to record its usage once. */
export class InferenceCall {
  readonly model: CatalogModel
  readonly deployment: Deployment
  readonly provider: Provider
  readonly providerCall: ProviderCall
  private recorded = false

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

  get clientGone(): boolean {
    return this.request.signal.aborted
  }

  /** Records the request's usage and cost; later calls are ignored, so every exit path may call it. */
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
    return cost
  }

  /** Records a failure before any token was produced and passes the error on. */
  fail(error: unknown): never {
    this.record(this.clientGone ? 499 : error instanceof GatewayError ? error.status : 500, 0, 0)
    throw error
  }
}
