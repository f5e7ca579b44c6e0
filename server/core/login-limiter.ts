import { GatewayError } from '@nilegate/shared/errors'

export interface LoginLimits {
  /** Failed logins (or password confirmations) per e-mail address in a window. */
  failuresPerAccount: number
  /** Attempts per client IP in a window: logins, sign-ups and e-mail verifications. */
  attemptsPerIp: number
  /** Verification mails a user may ask to be sent again in a window. */
  mailsPerAccount: number
  windowMs: number
}

export const defaultLoginLimits: LoginLimits = { failuresPerAccount: 10, attemptsPerIp: 50, mailsPerAccount: 5, windowMs: 15 * 60 * 1000 }

// Keys are pruned when touched; the rest are swept every so many calls, so idle ones do not pile up.
const sweepEvery = 1_000

/** Times of recent events per key, oldest first: an exact sliding window. */
class SlidingWindow {
  private readonly events = new Map<string, number[]>()

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Seconds until `key` is under the limit again; 0 when it already is. */
  retryAfterS(key: string, now: number): number {
    const recent = this.recent(key, now)
    if (recent.length < this.limit) return 0
    // Once this event leaves the window, one fewer than the limit remain.
    const oldestToLeave = recent[recent.length - this.limit]!
    return Math.max(1, Math.ceil((oldestToLeave + this.windowMs - now) / 1000))
  }

  record(key: string, now: number): void {
    const recent = this.recent(key, now)
    recent.push(now)
    this.events.set(key, recent)
  }

  clear(key: string): void {
    this.events.delete(key)
  }

  sweep(now: number): void {
    for (const key of [...this.events.keys()]) this.recent(key, now)
  }

  private recent(key: string, now: number): number[] {
    const events = this.events.get(key)
    if (!events) return []
    const firstInWindow = events.findIndex((at) => at > now - this.windowMs)
    if (firstInWindow === -1) {
      this.events.delete(key)
      return []
    }
    if (firstInWindow > 0) events.splice(0, firstInWindow)
    return events
  }
}

/**
 * Brute-force guards of the auth routes: failed logins per e-mail address (known or not, so the
 * limit reveals nothing), attempts per client IP, and verification mails per user, each in a
 * sliding window. Refused attempts are not counted, so a refused client is admitted again when its
 * window has room, not later. With Redis the windows are shared by every gateway instance
 * (adapters/redis/login-limiter.ts); in process, each instance holds its own.
 */
export interface LoginLimiter {
  /** Counts an attempt from `ip`, or throws 429 when the IP is over its limit. A request without a known peer is not limited. */
  admitAttempt(ip: string | null): Promise<void>
  /** Throws 429 while the e-mail address has failed too often. */
  checkAccount(email: string): Promise<void>
  recordFailure(email: string): Promise<void>
  /** A successful login forgets the address's failures. */
  clearFailures(email: string): Promise<void>
  /** Counts a verification mail for the user, or throws 429 over the limit. */
  admitMail(userId: string): Promise<void>
}

/** The windows of this process alone: with several gateway instances a client spread across N gets up to N times the limits. */
export class InProcessLoginLimiter implements LoginLimiter {
  private readonly limits: LoginLimits
  private readonly failures: SlidingWindow
  private readonly attempts: SlidingWindow
  private readonly mails: SlidingWindow
  private calls = 0

  constructor(
    limits: Partial<LoginLimits> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...defaultLoginLimits, ...limits }
    this.failures = new SlidingWindow(this.limits.failuresPerAccount, this.limits.windowMs)
    this.attempts = new SlidingWindow(this.limits.attemptsPerIp, this.limits.windowMs)
    this.mails = new SlidingWindow(this.limits.mailsPerAccount, this.limits.windowMs)
  }

  async admitAttempt(ip: string | null): Promise<void> {
    if (ip === null) return
    const now = this.tick()
    refuseWhile(this.attempts.retryAfterS(ip, now), attemptsRefusal)
    this.attempts.record(ip, now)
  }

  async checkAccount(email: string): Promise<void> {
    refuseWhile(this.failures.retryAfterS(email, this.tick()), failuresRefusal)
  }

  async recordFailure(email: string): Promise<void> {
    this.failures.record(email, this.tick())
  }

  async clearFailures(email: string): Promise<void> {
    this.failures.clear(email)
  }

  async admitMail(userId: string): Promise<void> {
    const now = this.tick()
    refuseWhile(this.mails.retryAfterS(userId, now), mailsRefusal)
    this.mails.record(userId, now)
  }

  private tick(): number {
    const now = this.now()
    if (++this.calls % sweepEvery === 0) {
      for (const window of [this.failures, this.attempts, this.mails]) window.sweep(now)
    }
    return now
  }
}

export const attemptsRefusal = 'Too many attempts from your address'
export const failuresRefusal = 'Too many failed logins for this account'
export const mailsRefusal = 'Too many verification mails were asked for'

/** Throws 429 `rate_limit_exceeded` naming `what` and the wait, when `retryAfterS` is above 0. */
export function refuseWhile(retryAfterS: number, what: string): void {
  if (retryAfterS > 0) throw new GatewayError('rate_limit_exceeded', `${what}; retry in ${retryAfterS} second${retryAfterS === 1 ? '' : 's'}.`, null, retryAfterS)
}
