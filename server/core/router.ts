import { GatewayError } from '@nilegate/shared/errors'
import type { Catalog, CatalogModel, Deployment } from './catalog'

/** How a call on a deployment ended, as far as the deployment's health is concerned. */
export type CallOutcome = 'success' | 'failure' | 'neutral'

/** A deployment's circuit: closed (serving), open (refusing until its cooldown ends), half-open (one trial request running). */
export type CircuitState = 'closed' | 'open' | 'half_open'

export interface RouterOptions {
  now?: () => number
  random?: () => number
  /**
   * The most calls this process may have in flight to upstreams at once (every deployment but the
   * simulator's, across models). Bun's fetch sends only so many at once and holds the rest without
   * a word; past this many the router answers as if every deployment were full instead.
   */
  maxUpstreamInFlight?: number
  /**
   * Told when calls open a deployment's circuit (`failures` in a row, or a failed trial) or a call
   * closes it; health probes report the changes they make themselves (`recordProbe`).
   */
  onCircuitChange?: (deployment: Deployment, change: 'opened' | 'closed', consecutiveFailures: number) => void
}

interface DeploymentState {
  inFlight: number
  consecutiveFailures: number
  /** When the circuit opened (or a failed health probe last confirmed it open), or null while it is closed. */
  openedAtMs: number | null
  /**
   * Whether a failed health probe opened the circuit, or kept it open: then the next probe that
   * succeeds closes it. A circuit opened by failed calls closes only on a call that succeeds, since
   * an upstream can answer its probe and still fail every call.
   */
  openedByProbe: boolean
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

/** Whether calls to the deployment go over the network (the simulator answers in process). */
function callsUpstream(deployment: Deployment): boolean {
  return deployment.provider !== 'simulator'
}

/**
 * Chooses a deployment for each call and keeps each deployment's health: requests in flight and a
 * circuit breaker fed by passive failures and active health probes. One per process; state lives in
 * memory, by deployment id, so it outlives a catalog reload for every deployment that keeps its id
 * (and calls still running on a replaced deployment object count against the same state).
 */
export class Router {
  private readonly states = new Map<string, DeploymentState>()
  private readonly now: () => number
  private readonly random: () => number
  private readonly maxUpstreamInFlight: number
  private readonly onCircuitChange: RouterOptions['onCircuitChange']
  private upstreamInFlight = 0

  constructor(options: RouterOptions = {}) {
    this.now = options.now ?? Date.now
    this.random = options.random ?? Math.random
    this.maxUpstreamInFlight = options.maxUpstreamInFlight ?? Number.POSITIVE_INFINITY
    this.onCircuitChange = options.onCircuitChange
  }

  /**
   * The deployment to call next: among those not excluded whose circuit lets traffic through and
   * that have room under their `maxConcurrent` (and, for an organization that requires data
   * residency, in its region), the one with the fewest requests in flight for its weight, ties
   * broken at random in proportion to weight. 503 `no_healthy_backends` when no deployment is
   * healthy; 503 `engine_unavailable` (retry in a second) when the healthy ones are all full, this
   * process's calls to upstreams at `maxUpstreamInFlight` counting as full for all but the simulator.
   */
  pick(model: CatalogModel, exclude: ReadonlySet<string> = new Set(), requiredRegion: string | null = null): Deployment {
    const nowMs = this.now()
    let best: Deployment[] = []
    let bestLoad = Infinity
    let full = 0
    for (const deployment of model.deployments) {
      if (requiredRegion !== null && deployment.region !== requiredRegion) continue
      if (exclude.has(deployment.id) || deployment.weight <= 0) continue
      const state = this.stateOf(deployment)
      if (!this.isAvailable(state, deployment, nowMs)) continue
      const atCapacity = deployment.maxConcurrent !== null && state.inFlight >= deployment.maxConcurrent
      if (atCapacity || (callsUpstream(deployment) && this.upstreamInFlight >= this.maxUpstreamInFlight)) {
        full++
        continue
      }
      const load = state.inFlight / deployment.weight
      if (load < bestLoad) {
        best = [deployment]
        bestLoad = load
      } else if (load === bestLoad) {
        best.push(deployment)
      }
    }
    if (best.length > 0) return this.pickWeighted(best)
    const where = requiredRegion === null ? '' : ` in region ${requiredRegion}, where your organization's data must stay,`
    if (full > 0) throw new GatewayError('engine_unavailable', `Every deployment of the model '${model.id}'${where} is serving as many requests as it may. Retry in a second.`)
    throw new GatewayError('no_healthy_backends', `The model '${model.id}' has no healthy deployment${where} right now. Retry or switch model.`)
  }

  /** Counts a call as in flight; a call through a half-open circuit is its trial. */
  acquire(deployment: Deployment): void {
    const state = this.stateOf(deployment)
    state.inFlight++
    if (callsUpstream(deployment)) this.upstreamInFlight++
    if (state.openedAtMs !== null) state.probing = true
  }

  /** Ends a call started by `acquire` and feeds its outcome to the circuit. */
  release(deployment: Deployment, outcome: CallOutcome): void {
    const state = this.stateOf(deployment)
    if (state.inFlight > 0 && callsUpstream(deployment)) this.upstreamInFlight--
    state.inFlight = Math.max(0, state.inFlight - 1)
    const wasTrial = state.probing && state.openedAtMs !== null
    if (outcome === 'success') {
      const wasOpen = state.openedAtMs !== null
      this.close(state)
      if (wasOpen) this.onCircuitChange?.(deployment, 'closed', 0)
    } else if (outcome === 'failure') {
      state.consecutiveFailures++
      if (wasTrial || state.consecutiveFailures >= deployment.circuit.failures) {
        const wasClosed = state.openedAtMs === null
        state.openedAtMs = this.now()
        state.openedByProbe = false
        if (wasClosed) this.onCircuitChange?.(deployment, 'opened', state.consecutiveFailures)
      }
      state.probing = false
    } else if (wasTrial) {
      // The trial told nothing (the client left, or sent a bad request): let another one through.
      state.probing = false
    }
  }

  /**
   * Feeds an active health probe's verdict to the circuit: a failed probe opens it (or keeps it
   * open, restarting its cooldown, so no client request is spent on a deployment that fails its
   * probes); a probe that succeeds closes a circuit that failed probes had opened or kept open.
   * Returns the change it made, for the log.
   */
  recordProbe(deployment: Deployment, healthy: boolean): 'opened' | 'closed' | null {
    const state = this.stateOf(deployment)
    if (!healthy) {
      const wasClosed = state.openedAtMs === null
      state.openedAtMs = this.now()
      state.openedByProbe = true
      return wasClosed ? 'opened' : null
    }
    if (state.openedAtMs === null || !state.openedByProbe) return null
    this.close(state)
    return 'closed'
  }

  circuit(deployment: Deployment): CircuitState {
    const state = this.stateOf(deployment)
    if (state.openedAtMs === null) return 'closed'
    return state.probing || this.now() - state.openedAtMs >= deployment.circuit.cooldownMs ? 'half_open' : 'open'
  }

  /** Whether the deployment's circuit is open (refusing traffic, or waiting on its trial). */
  isOpen(deployment: Deployment): boolean {
    return this.stateOf(deployment).openedAtMs !== null
  }

  inFlight(deployment: Deployment): number {
    return this.stateOf(deployment).inFlight
  }

  private close(state: DeploymentState): void {
    state.consecutiveFailures = 0
    state.openedAtMs = null
    state.openedByProbe = false
    state.probing = false
  }

  private isAvailable(state: DeploymentState, deployment: Deployment, nowMs: number): boolean {
    if (state.openedAtMs === null) return true
    return !state.probing && nowMs - state.openedAtMs >= deployment.circuit.cooldownMs
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
    let state = this.states.get(deployment.id)
    if (!state) {
      state = { inFlight: 0, consecutiveFailures: 0, openedAtMs: null, openedByProbe: false, probing: false }
      this.states.set(deployment.id, state)
    }
    return state
  }
}

const defaultRouters = new WeakMap<Catalog, Router>()

/** The process's router over a catalog, for callers that were not handed one. */
export function defaultRouter(catalog: Catalog): Router {
  let router = defaultRouters.get(catalog)
  if (!router) {
    router = new Router()
    defaultRouters.set(catalog, router)
  }
  return router
}
