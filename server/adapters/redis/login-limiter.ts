import { GatewayError } from '@nilegate/shared/errors'
import {
  attemptsRefusal,
  backoffRefusal,
  defaultLoginLimits,
  failuresRefusal,
  InProcessLoginLimiter,
  limitedAddress,
  mailsRefusal,
  pairKey,
  refuseWhile,
  seconds,
  type LoginAttempt,
  type LoginLimiter,
  type LoginLimits,
} from '../../core/login-limiter'
import { answerWithin } from '../../core/answer-within'
import type { RedisConnection } from './connect-redis'
import { RedisScript } from './redis-script'
import loginAttemptSource from './scripts/login-attempt.lua' with { type: 'text' }
import loginWindowSource from './scripts/login-window.lua' with { type: 'text' }

const loginWindowScript = new RedisScript('login-window', loginWindowSource)
const loginAttemptScript = new RedisScript('login-attempt', loginAttemptSource)

export interface RedisLoginLimiterOptions {
  limits?: Partial<LoginLimits>
  /** Put before every key: isolates tests, or deployments sharing a Redis. */
  keyPrefix?: string
  /** How long one Redis call may take before the local windows decide instead. */
  commandTimeoutMs?: number
  now?: () => number
  log?: (message: string) => void
}

type Window = 'attempts' | 'mails'

/**
 * The login guards' windows in Redis, so that they hold across every gateway instance: one sorted
 * set per (address, IP) pair, address, IP or user, keyed by a SHA-256 of it (no addresses in
 * Redis), each check one script (login-window.lua; login-attempt.lua for a pair and its address,
 * which share the address's hash tag). While Redis cannot answer, this instance's own windows
 * decide (and the outage is logged once): logins go on, limited per instance, rather than all
 * failing or none being limited.
 */
export class RedisLoginLimiter implements LoginLimiter {
  private readonly limits: LoginLimits
  private readonly keyPrefix: string
  private readonly commandTimeoutMs: number
  private readonly now: () => number
  private readonly log: (message: string) => void
  private readonly local: InProcessLoginLimiter
  private readonly instanceId = crypto.randomUUID()
  private sequence = 0
  private degraded = false

  constructor(
    private readonly client: RedisConnection,
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
    const waitMs = await this.run('attempts', limitedAddress(ip), this.limits.attemptsPerIp, () => this.local.admitAttempt(ip))
    refuseWhile(seconds(waitMs), attemptsRefusal)
  }

  async admitLogin(email: string, ip: string | null): Promise<LoginAttempt> {
    const ipKey = ip === null ? null : limitedAddress(ip)
    const member = this.newMember()
    const now = this.now()
    const addressTag = Bun.SHA256.hash(email, 'hex')
    const pair = `${this.keyPrefix}nilegate:login:{${addressTag}}:pair:${Bun.SHA256.hash(pairKey(email, ipKey), 'hex')}`
    const address = `${this.keyPrefix}nilegate:login:{${addressTag}}:failures`
    const attempts = ipKey === null ? null : this.key('attempts', ipKey)
    let verdict: [number, number]
    try {
      if (attempts !== null) {
        const waitMs = Number(await this.call(loginWindowScript.run(this.client, [attempts], [String(now), String(this.limits.windowMs), String(this.limits.attemptsPerIp), 'record', member])))
        refuseWhile(seconds(waitMs), attemptsRefusal)
      }
      verdict = (await this.call(
        loginAttemptScript.run(this.client, [pair, address], [now, this.limits.windowMs, this.limits.failuresPerAccountAndIp, this.limits.failuresBeforeBackoff, this.limits.maxBackoffMs, member].map(String)),
      )) as [number, number]
      if (verdict[0] !== 0 && attempts !== null) await this.call(this.client.zRem(attempts, member))
      this.recovered()
    } catch (error) {
      if (error instanceof GatewayError) throw error
      this.fellBack(error)
      return this.local.admitLogin(email, ip)
    }
    refuseWhile(seconds(Number(verdict[1])), Number(verdict[0]) === 1 ? failuresRefusal : backoffRefusal)
    return {
      succeeded: async () => {
        try {
          await this.call(Promise.all([this.client.del(pair), this.client.zRem(address, member), attempts === null ? 0 : this.client.zRem(attempts, member)]))
          this.recovered()
        } catch (error) {
          this.fellBack(error)
        }
      },
    }
  }

  async admitMail(userId: string): Promise<void> {
    const waitMs = await this.run('mails', userId, this.limits.mailsPerAccount, () => this.local.admitMail(userId))
    refuseWhile(seconds(waitMs), mailsRefusal)
  }

  /** The window's answer from Redis (ms to wait, 0 to go on); while Redis cannot answer, `locally` decides and 0 comes back. */
  private async run(window: Window, value: string, limit: number, locally: () => Promise<void>): Promise<number> {
    let waitMs: unknown
    try {
      waitMs = await this.call(loginWindowScript.run(this.client, [this.key(window, value)], [String(this.now()), String(this.limits.windowMs), String(limit), 'record', this.newMember()]))
    } catch (error) {
      this.fellBack(error)
      await locally()
      return 0
    }
    this.recovered()
    return Number(waitMs)
  }

  private call<T>(command: Promise<T>): Promise<T> {
    return answerWithin(command, this.commandTimeoutMs, 'redis')
  }

  /** A member of the windows' sets: unique across instances (a pid is not, in containers). */
  private newMember(): string {
    return `${this.instanceId}:${++this.sequence}`
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
