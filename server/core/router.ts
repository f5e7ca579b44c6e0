import { GatewayError } from '@nilegate/shared/errors'
import type { Catalog, CatalogModel, Deployment } from './catalog'

/** How a call on a deployment ended, as far as the deployment's health is concerned. */
export type CallOutcome = 'success' | 'failure' | 'neutral'

export interface RouterOptions {
  /** Consecutive upstream failures that open a deployment's circuit. */
  failureThreshold?: number
  /** How long an open circuit refuses traffic before it lets one probe request through. */
  cooldownMs?: number
  now?: () => number
  random?: () => number
}

interface DeploymentState {
  inFlight: number
  consecutiveFailures: number
  /** When the circuit opened, or null while it is closed. */
  openedAtMs: number | null
  /** A half-open circuit lets one request through; this is it, while it runs. */
  probing: boolean
}

const upstreamTroubleCodes = new Set(['no_healthy_backends', 'engine_unavailable', 'service_unavailable'])

/**
 * Whether an error says the deployment is in trouble (its errors, its timeouts), as opposed to the
 * client's own mistake or the client going away, which say nothing about the deployment.
 */
export function isUpstreamFailure(error: unknown): boolean {
  if (error instanceof GatewayError) return upstreamTroubleCodes.has(error.code)
  return error instanceof Error && error.name === 'TimeoutError'
}

/**
 * Chooses a deployment for each call and keeps each deployment's health: requests in flight and a
 * circuit breaker fed by passive failures. One per process; state lives in memory.
 */
export class Router {
  private readonly states = new Map<Deployment, DeploymentState>()
  private readonly failureThreshold: number
  private readonly cooldownMs: number
  private readonly now: () => number
  private readonly random: () => number

  constructor(catalog: Catalog | null = null, options: RouterOptions = {}) {
    this.failureThreshold = options.failureThreshold ?? 5
    this.cooldownMs = options.cooldownMs ?? 30_000
    this.now = options.now ?? Date.now
    this.random = options.random ?? Math.random
    for (const model of catalog?.models ?? []) for (const deployment of model.deployments) this.stateOf(deployment)
  }

  /**
   * The deployment to call next: among those not excluded whose circuit lets traffic through (and,
   * for an organization that requires data residency, in its region), the one with the fewest
   * requests in flight for its weight, ties broken at random in proportion to weight.
   */
  pick(model: CatalogModel, exclude: ReadonlySet<string> = new Set(), requiredRegion: string | null = null): Deployment {
    const nowMs = this.now()
    let best: Deployment[] = []
    let bestLoad = Infinity
    for (const deployment of model.deployments) {
      if (requiredRegion !== null && deployment.region !== requiredRegion) continue
      if (exclude.has(deployment.id) || deployment.weight <= 0 || !this.isAvailable(this.stateOf(deployment), nowMs)) continue
      const load = this.stateOf(deployment).inFlight / deployment.weight
      if (load < bestLoad) {
        best = [deployment]
        bestLoad = load
      } else if (load === bestLoad) {
        best.push(deployment)
      }
    }
    if (best.length === 0) {
      const where = requiredRegion === null ? '' : ` in region ${requiredRegion}, where your organization's data must stay,`
      throw new GatewayError('no_healthy_backends', `The model '${model.id}' has no healthy deployment${where} right now. Retry or switch model.`)
    }
    return this.pickWeighted(best)
  }

  /** Counts a call as in flight; a call through a half-open circuit is its probe. */
  acquire(deployment: Deployment): void {
    const state = this.stateOf(deployment)
    state.inFlight++
    if (state.openedAtMs !== null) state.probing = true
  }

  /** Ends a call started by `acquire` and feeds its outcome to the circuit. */
  release(deployment: Deployment, outcome: CallOutcome): void {
    const state = this.stateOf(deployment)
    state.inFlight = Math.max(0, state.inFlight - 1)
    const wasProbe = state.probing && state.openedAtMs !== null
    if (outcome === 'success') {
      state.consecutiveFailures = 0
      state.openedAtMs = null
      state.probing = false
    } else if (outcome === 'failure') {
      state.consecutiveFailures++
      if (wasProbe || state.consecutiveFailures >= this.failureThreshold) state.openedAtMs = this.now()
      state.probing = false
    } else if (wasProbe) {
      // The probe told nothing (the client left, or sent a bad request): let another one through.
      state.probing = false
    }
  }

  /** Whether the deployment's circuit is open (refusing traffic, or waiting on its probe). */
  isOpen(deployment: Deployment): boolean {
    return this.stateOf(deployment).openedAtMs !== null
  }

  inFlight(deployment: Deployment): number {
    return this.stateOf(deployment).inFlight
  }

  private isAvailable(state: DeploymentState, nowMs: number): boolean {
    if (state.openedAtMs === null) return true
    return !state.probing && nowMs - state.openedAtMs >= this.cooldownMs
  }

  private pickWeighted(deployments: Deployment[]): Deployment {
    if (deployments.length === 1) return deployments[0]!
    let total = 0
    for (const deployment of deployments) total += deployment.weight
    let point = this.random() * total
    for (const deployment of deployments) {
      point -= deployment.weight
      if (point < 0) return deployment
    }
    return deployments[deployments.length - 1]!
  }

  private stateOf(deployment: Deployment): DeploymentState {
    let state = this.states.get(deployment)
    if (!state) {
      state = { inFlight: 0, consecutiveFailures: 0, openedAtMs: null, probing: false }
      this.states.set(deployment, state)
    }
    return state
  }
}

const defaultRouters = new WeakMap<Catalog, Router>()

/** The process's router over a catalog, for callers that were not handed one. */
export function defaultRouter(catalog: Catalog): Router {
  let router = defaultRouters.get(catalog)
  if (!router) {
    router = new Router(catalog)
    defaultRouters.set(catalog, router)
  }
  return router
}
