import { isIP } from 'node:net'
import { GatewayError } from '@nilegate/shared/errors'

export interface LoginLimits {
  /** Failed logins (or password confirmations) for one e-mail address from one client IP in a window: over it, that pair is refused. */
  failuresPerAccountAndIp: number
  /** Failed logins, sign-ups and e-mail verifications per client IP in a window: over it, the IP is refused. */
  attemptsPerIp: number
  /** Failed logins for one address from every IP in a window before its backoff starts. */
  failuresBeforeBackoff: number
  /** The longest the backoff of an address makes a client that already failed for it wait after the address's last failure. */
  maxBackoffMs: number
  /** Mails (verification mails sent again, password resets) one account or address may ask for in a window. */
  mailsPerAccount: number
  windowMs: number
}

export const defaultLoginLimits: LoginLimits = {
  failuresPerAccountAndIp: 10,
  attemptsPerIp: 50,
  failuresBeforeBackoff: 10,
  maxBackoffMs: 5_000,
  mailsPerAccount: 5,
  windowMs: 15 * 60 * 1000,
}

/**
 * How long an address with `failures` in the window makes a client that failed for it wait after
 * its last failure: a second at the threshold, doubling with each failure, capped at `maxBackoffMs`.
 * Mirrored in adapters/redis/scripts/login-attempt.lua.
 */
export function backoffMs(failures: number, limits: Pick<LoginLimits, 'failuresBeforeBackoff' | 'maxBackoffMs'>): number {
  if (failures < limits.failuresBeforeBackoff) return 0
  return Math.min(1000 * 2 ** Math.min(failures - limits.failuresBeforeBackoff, 30), limits.maxBackoffMs)
}

/**
 * The address an IP is limited as: IPv4 whole, IPv6 by its /64, the block one subscriber gets (a
 * client that rotates through its /64 would otherwise look like 2^64 clean addresses).
 */
export function limitedAddress(ip: string): string {
  if (isIP(ip) !== 6) return ip
  const [head = '', tail] = ip.toLowerCase().split('::')
  const groupsOf = (part: string | undefined) => (part ? part.split(':').flatMap((group) => (group.includes('.') ? ['0', '0'] : [group])) : [])
  const before = groupsOf(head)
  const after = groupsOf(tail)
  const groups = tail === undefined ? before : [...before, ...Array(8 - before.length - after.length).fill('0'), ...after]
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, '')).join(':')}::/64`
}

// Keys are pruned when touched; the rest are swept every so many calls, so idle ones do not pile up.
const sweepEvery = 1_000

/** Times of recent events per key, oldest first: an exact sliding window. */
class SlidingWindow {
  private readonly events = new Map<string, number[]>()

  constructor(private readonly windowMs: number) {}

  /** Seconds until `key` has fewer than `limit` events again; 0 when it already has. */
  retryAfterS(key: string, limit: number, now: number): number {
    const recent = this.recent(key, now)
    if (recent.length < limit) return 0
    // Once this event leaves the window, one fewer than the limit remain.
    const oldestToLeave = recent[recent.length - limit]!
    return seconds(oldestToLeave + this.windowMs - now)
  }

  count(key: string, now: number): number {
    return this.recent(key, now).length
  }

  latest(key: string, now: number): number | undefined {
    return this.recent(key, now).at(-1)
  }

  record(key: string, now: number): void {
    const recent = this.recent(key, now)
    recent.push(now)
    this.events.set(key, recent)
  }

  /** Takes back one event recorded at `at`. */
  remove(key: string, at: number): void {
    const events = this.events.get(key)
    const index = events?.lastIndexOf(at) ?? -1
    if (index !== -1) events!.splice(index, 1)
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

/** A password check under way: counted as a failure until it is known to have succeeded. */
export interface LoginAttempt {
  /** The password was right: the attempt is no failure, and the failures of its address from its IP are forgotten. */
  succeeded(): Promise<void>
}

/**
 * Brute-force guards of the auth routes, each an exact sliding window. Failed logins count per
 * (e-mail address, client IP) pair, which they lock, and per IP, which they lock at a higher
 * limit together with sign-ups and verifications. Per address alone they only slow down clients
 * that already failed for it (a backoff of a few seconds): a stranger's failures from elsewhere
 * never lock the owner out, and an IP with a clean record for the address is always let try.
 * An attempt counts as a failure from the moment it is admitted, so concurrent guesses cannot
 * slip past a limit while their passwords are checked; a success takes it back. Refused attempts
 * are not counted. With Redis the windows are shared by every gateway instance
 * (adapters/redis/login-limiter.ts); in process, each instance holds its own.
 */
export interface LoginLimiter {
  /** Counts a sign-up or verification from `ip`, or throws 429 when the IP is over its limit. A request without a known peer is not limited per IP. */
  admitAttempt(ip: string | null): Promise<void>
  /** Admits a password check of `email` from `ip`, or throws 429 while the IP or the pair is locked or the address backs off a client that failed for it. */
  admitLogin(email: string, ip: string | null): Promise<LoginAttempt>
  /** Counts a mail asked for an account (a user id, or a key such as `password_reset:<address>`), or throws 429 over the limit. */
  admitMail(account: string): Promise<void>
}

/** The windows of this process alone: with several gateway instances a client spread across N gets up to N times the limits. */
export class InProcessLoginLimiter implements LoginLimiter {
  private readonly limits: LoginLimits
  private readonly pairFailures: SlidingWindow
  private readonly addressFailures: SlidingWindow
  private readonly attempts: SlidingWindow
  private readonly mails: SlidingWindow
  private calls = 0

  constructor(
    limits: Partial<LoginLimits> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...defaultLoginLimits, ...limits }
    this.pairFailures = new SlidingWindow(this.limits.windowMs)
    this.addressFailures = new SlidingWindow(this.limits.windowMs)
    this.attempts = new SlidingWindow(this.limits.windowMs)
    this.mails = new SlidingWindow(this.limits.windowMs)
  }

  async admitAttempt(ip: string | null): Promise<void> {
    if (ip === null) return
    const now = this.tick()
    const key = limitedAddress(ip)
    refuseWhile(this.attempts.retryAfterS(key, this.limits.attemptsPerIp, now), attemptsRefusal)
    this.attempts.record(key, now)
  }

  async admitLogin(email: string, ip: string | null): Promise<LoginAttempt> {
    const now = this.tick()
    const ipKey = ip === null ? null : limitedAddress(ip)
    if (ipKey !== null) refuseWhile(this.attempts.retryAfterS(ipKey, this.limits.attemptsPerIp, now), attemptsRefusal)
    const pair = pairKey(email, ipKey)
    refuseWhile(this.pairFailures.retryAfterS(pair, this.limits.failuresPerAccountAndIp, now), failuresRefusal)
    if (this.pairFailures.count(pair, now) > 0) {
      const latest = this.addressFailures.latest(email, now)
      const waitMs = latest === undefined ? 0 : latest + backoffMs(this.addressFailures.count(email, now), this.limits) - now
      refuseWhile(seconds(waitMs), backoffRefusal)
    }
    if (ipKey !== null) this.attempts.record(ipKey, now)
    this.pairFailures.record(pair, now)
    this.addressFailures.record(email, now)
    return {
      succeeded: async () => {
        if (ipKey !== null) this.attempts.remove(ipKey, now)
        this.addressFailures.remove(email, now)
        this.pairFailures.clear(pair)
      },
    }
  }

  async admitMail(userId: string): Promise<void> {
    const now = this.tick()
    refuseWhile(this.mails.retryAfterS(userId, this.limits.mailsPerAccount, now), mailsRefusal)
    this.mails.record(userId, now)
  }

  private tick(): number {
    const now = this.now()
    if (++this.calls % sweepEvery === 0) {
      for (const window of [this.pairFailures, this.addressFailures, this.attempts, this.mails]) window.sweep(now)
    }
    return now
  }
}

/** The key of an address's failures from one IP (a request without a known peer counts as one more IP). */
export function pairKey(email: string, ipKey: string | null): string {
  return `${email}\n${ipKey ?? ''}`
}

export const attemptsRefusal = 'Too many attempts from your address'
export const failuresRefusal = 'Too many failed logins for this account from your address'
export const backoffRefusal = 'Failed logins for this account are being slowed down'
export const mailsRefusal = 'Too many mails were asked for this account'

/** Whole seconds to wait for `waitMs`, at least 1; 0 when there is nothing to wait for. */
export function seconds(waitMs: number): number {
  return waitMs > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : 0
}

/** Throws 429 `rate_limit_exceeded` naming `what` and the wait, when `retryAfterS` is above 0. */
export function refuseWhile(retryAfterS: number, what: string): void {
  if (retryAfterS > 0) throw new GatewayError('rate_limit_exceeded', `${what}; retry in ${retryAfterS} second${retryAfterS === 1 ? '' : 's'}.`, null, retryAfterS)
}
