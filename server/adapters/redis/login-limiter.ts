import { defaultLoginLimits, attemptsRefusal, failuresRefusal, InProcessLoginLimiter, mailsRefusal, refuseWhile, type LoginLimiter, type LoginLimits } from '../../core/login-limiter'
import { answerWithin } from '../../core/answer-within'
import type { RedisClient } from './client'
import { RedisScript } from './redis-script'
import loginWindowSource from './scripts/login-window.lua' with { type: 'text' }

const loginWindowScript = new RedisScript('login-window', loginWindowSource)

export interface RedisLoginLimiterOptions {
  limits?: Partial<LoginLimits>
  /** Put before every key: isolates tests, or deployments sharing a Redis. */
  keyPrefix?: string
  /** How long one Redis call may take before the local windows decide instead. */
  commandTimeoutMs?: number
  now?: () => number
  log?: (message: string) => void
}

type Window = 'failures' | 'attempts' | 'mails'

/**
 * The login guards' windows in Redis, so that they hold across every gateway instance: one sorted
 * set per address, IP or user, keyed by a SHA-256 of it (no addresses in Redis), each check one
 * script (login-window.lua). While Redis cannot answer, this instance's own windows decide (and
 * the outage is logged once): logins go on, limited per instance, rather than all failing or none
 * being limited.
 */
export class RedisLoginLimiter implements LoginLimiter {
  private readonly limits: LoginLimits
  private readonly keyPrefix: string
  private readonly commandTimeoutMs: number
  private readonly now: () => number
  private readonly log: (message: string) => void
  private readonly local: InProcessLoginLimiter
  // Members of the windows' sets: unique across instances (a pid is not, in containers).
  private readonly instanceId = crypto.randomUUID()
  private sequence = 0
  private degraded = false

  constructor(
    private readonly client: RedisClient,
    options: RedisLoginLimiterOptions = {},
  ) {
    this.limits = { ...defaultLoginLimits, ...options.limits }
    this.keyPrefix = options.keyPrefix ?? ''
    this.commandTimeoutMs = options.commandTimeoutMs ?? 1_000
    this.now = options.now ?? Date.now
    this.log = options.log ?? ((message) => console.error(message))
    this.local = new InProcessLoginLimiter(this.limits, this.now)
  }

  async admitAttempt(ip: string | null): Promise<void> {
    if (ip === null) return
    const waitMs = await this.run('attempts', ip, this.limits.attemptsPerIp, 'record', () => this.local.admitAttempt(ip))
    refuseWhile(seconds(waitMs), attemptsRefusal)
  }

  async checkAccount(email: string): Promise<void> {
    const waitMs = await this.run('failures', email, this.limits.failuresPerAccount, 'check', () => this.local.checkAccount(email))
    refuseWhile(seconds(waitMs), failuresRefusal)
  }

  async recordFailure(email: string): Promise<void> {
    await this.run('failures', email, 0, 'record', () => this.local.recordFailure(email))
  }

  async clearFailures(email: string): Promise<void> {
    await this.local.clearFailures(email)
    try {
      await answerWithin(this.client.del(this.key('failures', email)), this.commandTimeoutMs, 'redis')
      this.recovered()
    } catch (error) {
      this.fellBack(error)
    }
  }

  async admitMail(userId: string): Promise<void> {
    const waitMs = await this.run('mails', userId, this.limits.mailsPerAccount, 'record', () => this.local.admitMail(userId))
    refuseWhile(seconds(waitMs), mailsRefusal)
  }

  /** The window's answer from Redis (ms to wait, 0 to go on); while Redis cannot answer, `locally` decides and 0 comes back. */
  private async run(window: Window, value: string, limit: number, mode: 'record' | 'check', locally: () => Promise<void>): Promise<number> {
    const now = this.now()
    const member = `${this.instanceId}:${++this.sequence}`
    let waitMs: unknown
    try {
      waitMs = await answerWithin(
        loginWindowScript.run(this.client, [this.key(window, value)], [String(now), String(this.limits.windowMs), String(limit), mode, member]),
        this.commandTimeoutMs,
        'redis',
      )
    } catch (error) {
      this.fellBack(error)
      await locally()
      return 0
    }
    this.recovered()
    return Number(waitMs)
  }

  private key(window: Window, value: string): string {
    return `${this.keyPrefix}nilegate:login:${window}:${Bun.SHA256.hash(value, 'hex')}`
  }

  private fellBack(error: unknown): void {
    if (this.degraded) return
    this.degraded = true
    this.log(`redis: login limits fall back to this instance's own windows until Redis answers (${(error as Error).message})`)
  }

  private recovered(): void {
    if (!this.degraded) return
    this.degraded = false
    this.log('redis: login limits are shared again')
  }
}

function seconds(waitMs: number): number {
  return waitMs > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : 0
}
