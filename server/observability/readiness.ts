import type { Catalog } from '../core/catalog'
import type { Router } from '../core/router'

/** A part the gateway needs to serve: `ok`, `failing`, or `not_configured` (Redis without REDIS_URL). */
export type CheckState = 'ok' | 'failing' | 'not_configured'

/** The parts readiness checks, each with its state. */
export interface ReadinessChecks {
  database: CheckState
  redis: CheckState
  deployments: CheckState
}

export interface ReadinessReport {
  ready: boolean
  checks: ReadinessChecks
  /** Why each failing part fails, in words fit for anyone who can reach the probe (no error details). */
  reasons: string[]
}

export interface ReadinessOptions {
  /** Answers when the database does; rejects or never answers otherwise. */
  database: () => Promise<unknown>
  /** Answers when Redis does; absent without REDIS_URL. */
  redis?: () => Promise<unknown>
  /** Whether at least one live deployment may be sent traffic. */
  deployments: () => boolean
  /** How long the database and Redis may take to answer (default 2 s). */
  timeoutMs?: number
  /** How long a report is reused, so that many probes cost one check (default 1 s; 0 checks every time). */
  maxAgeMs?: number
  /** Told of each change of readiness, with the failing parts' errors (which the report does not show). */
  onChange?: (report: ReadinessReport, errors: unknown[]) => void
}

class TimedOut extends Error {
  constructor(what: string, timeoutMs: number) {
    super(`${what} did not answer within ${timeoutMs} ms`)
  }
}

async function answers(check: () => Promise<unknown>, what: string, timeoutMs: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new TimedOut(what, timeoutMs)), timeoutMs)))
  try {
    await Promise.race([check(), timeout])
    return null
  } catch (error) {
    return error ?? new Error(`${what} failed`)
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Whether the gateway can serve: its database answers, its Redis answers (when it has one), at
 * least one live deployment's circuit lets traffic through, and it is not shutting down. Checks
 * run at most once per `maxAgeMs`, concurrent probes sharing one, so that probes stay cheap
 * whoever sends them.
 */
export class Readiness {
  private last: { atMs: number; report: ReadinessReport } | null = null
  private running: Promise<ReadinessReport> | null = null
  private draining = false
  private wasReady: boolean | null = null

  constructor(private readonly options: ReadinessOptions) {}

  /** From now on the gateway is not ready: it is finishing the requests in flight before it stops. */
  drain(): void {
    this.draining = true
  }

  get isDraining(): boolean {
    return this.draining
  }

  async check(): Promise<ReadinessReport> {
    const maxAgeMs = this.options.maxAgeMs ?? 1_000
    if (this.last && performance.now() - this.last.atMs < maxAgeMs && !this.draining) return this.last.report
    this.running ??= this.run().finally(() => (this.running = null))
    return this.running
  }

  private async run(): Promise<ReadinessReport> {
    const timeoutMs = this.options.timeoutMs ?? 2_000
    const [databaseError, redisError] = await Promise.all([
      answers(this.options.database, 'the database', timeoutMs),
      this.options.redis ? answers(this.options.redis, 'Redis', timeoutMs) : Promise.resolve(undefined),
    ])
    const deploymentsOk = this.options.deployments()
    const checks: ReadinessChecks = {
      database: databaseError === null ? 'ok' : 'failing',
      redis: redisError === undefined ? 'not_configured' : redisError === null ? 'ok' : 'failing',
      deployments: deploymentsOk ? 'ok' : 'failing',
    }
    const reasons: string[] = []
    if (this.draining) reasons.push('the gateway is shutting down')
    if (databaseError !== null) reasons.push(databaseError instanceof TimedOut ? databaseError.message : 'the database is not answering')
    if (redisError !== null && redisError !== undefined) reasons.push(redisError instanceof TimedOut ? redisError.message : 'Redis is not answering')
    if (!deploymentsOk) reasons.push('no live deployment can be sent traffic (every circuit is open)')
    const report: ReadinessReport = { ready: reasons.length === 0, checks, reasons }
    this.last = { atMs: performance.now(), report }
    if (report.ready !== this.wasReady) {
      this.wasReady = report.ready
      this.options.onChange?.(report, [databaseError, redisError].filter((error) => error !== null && error !== undefined))
    }
    return report
  }
}

/** Whether any live deployment of `catalog` may be sent traffic: its circuit is not open (closed, or half-open). */
export function hasServingDeployment(catalog: Catalog, router: Router): boolean {
  return catalog.models.some((model) => model.status === 'live' && model.deployments.some((deployment) => deployment.weight > 0 && router.circuit(deployment) !== 'open'))
}
