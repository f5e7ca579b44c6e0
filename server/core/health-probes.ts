import type { Catalog, Deployment } from './catalog'
import type { Router } from './router'

/** Asks a deployment whether it is up; rejects with a reason (never a secret) when it is not. */
export type DeploymentCheck = (deployment: Deployment) => Promise<void>

export interface HealthProbeOptions {
  check: DeploymentCheck
  /** Where circuit changes are reported. */
  log?: (message: string) => void
  random?: () => number
  /**
   * The most probes in flight at once (default: every deployment at once). The gateway keeps this
   * many of fetch's places for probes, so that a probe never waits behind calls.
   */
  concurrency?: number
}

/** Rounds start between 80% and 120% of the interval apart, so that gateways do not probe in step. */
const jitter = 0.2

/**
 * Active health probes: every deployment that is not the simulator (which is always healthy) is
 * checked once per round, all at once, and the verdicts go to the router's circuits. The interval
 * and the deployments are read from the catalog at each round, so a reload changes them; an
 * interval of 0 stops the rounds until a reload sets one. Nothing runs until `start`: tests call
 * `runOnce` instead.
 */
export class HealthProbes {
  private timer: ReturnType<typeof setTimeout> | undefined
  private round: Promise<void> | null = null
  private stopped = true
  private readonly log: (message: string) => void
  private readonly random: () => number

  constructor(
    private readonly catalog: Catalog,
    private readonly router: Router,
    private readonly options: HealthProbeOptions,
  ) {
    this.log = options.log ?? console.log
    this.random = options.random ?? Math.random
  }

  /**
   * Probes every deployment once, at most `concurrency` at a time, and applies the verdicts;
   * resolves when all have answered.
   */
  async runOnce(): Promise<void> {
    const byId = new Map<string, Deployment>()
    for (const deployment of this.catalog.liveDeployments) if (deployment.provider !== 'simulator') byId.set(deployment.id, deployment)
    const waiting = byId.values()
    const prober = async () => {
      for (const deployment of waiting) await this.probe(deployment)
    }
    await Promise.all(Array.from({ length: Math.min(byId.size, Math.max(1, this.options.concurrency ?? byId.size)) }, prober))
  }

  /** Starts the rounds; each starts an interval (jittered) after the previous one ended. */
  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.schedule()
  }

  /** Stops the rounds and waits for the one in progress. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.round
  }

  private schedule(): void {
    if (this.stopped) return
    const intervalMs = this.catalog.settings.probeIntervalMs
    // With probes off, look again later: a reload may turn them on.
    const delayMs = intervalMs > 0 ? intervalMs * (1 - jitter + 2 * jitter * this.random()) : 60_000
    this.timer = setTimeout(() => {
      if (this.catalog.settings.probeIntervalMs === 0) return this.schedule()
      this.round = this.runOnce().finally(() => {
        this.round = null
        this.schedule()
      })
    }, delayMs)
    // The probes alone never keep the process alive.
    this.timer.unref()
  }

  private async probe(deployment: Deployment): Promise<void> {
    let failure: string | null = null
    try {
      await this.options.check(deployment)
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error)
    }
    const change = this.router.recordProbe(deployment, failure === null)
    if (change === 'opened') this.log(`deployment ${deployment.id} failed its health probe (${failure}): no traffic until it answers again`)
    if (change === 'closed') this.log(`deployment ${deployment.id} answers its health probe again: traffic resumes`)
  }
}
