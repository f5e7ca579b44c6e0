import { isIP } from 'node:net'
import { GatewayError } from '@nilegate/shared/errors'

/** Credentials of no account one address may have looked up at once, and how fast it earns more. */
export const unknownCredentialBurst = 20
export const unknownCredentialsPerSecond = 2
/** Requests of one address that may wait for a place while its lookups are under way. */
export const maxWaitingPerAddress = 1_000

interface Allowance {
  lookups: number
  updatedMs: number
}

/**
 * The client an address stands for: an IPv4 address, or the /64 of an IPv6 one (a single host is
 * usually handed a whole /64, so its addresses are one client); 'unknown' when there is none.
 */
export function addressGroup(ip: string | null): string {
  if (ip === null) return 'unknown'
  if (isIP(ip) !== 6) return ip
  const [head = '', tail = ''] = ip.toLowerCase().split('::')
  const left = head === '' ? [] : head.split(':')
  if (left.length >= 4 || !ip.includes('::')) return left.slice(0, 4).join(':')
  const right = tail === '' ? [] : tail.split(':')
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return groups.slice(0, 4).join(':')
}

/**
 * Keeps a flood of made-up credentials from reaching the database once per request. A credential
 * that is not in memory costs a lookup; each address (`addressGroup`) has an allowance of `burst`
 * lookups of credentials that turn out unknown, refilled at `perSecond` like a token bucket. Past
 * it, the address's credentials that are not in memory get 429 with Retry-After, without a lookup;
 * those in memory never pass through here.
 *
 * `take` holds a place for the lookup before it starts and `end` returns it when the credential
 * exists, so concurrent requests cannot overrun the bound of `burst + perSecond * seconds` lookups
 * of unknown credentials per address. A request that finds no place while the address has lookups
 * under way waits for one of them to end rather than be refused: a load tester or a server starting
 * with a thousand real keys from one address has more new keys in flight at once than `burst`, and
 * each lookup that finds its key frees a place. Where many lookups of good credentials may
 * run at once from one address (sessions, which are not cached), `check` refuses an exhausted
 * address and `charge` counts a lookup that found nothing: the bound then grows by the requests
 * the address has in flight at once.
 */
export class AuthFailureLimiter {
  private readonly addresses = new Map<string, Allowance>()
  /** Lookups under way, by address. */
  private readonly running = new Map<string, number>()
  /** Requests waiting for a place, by address: woken whenever one of the address's lookups ends. */
  private readonly waiting = new Map<string, Array<() => void>>()
  private sweptAtMs = Number.NEGATIVE_INFINITY

  constructor(
    private readonly burst = unknownCredentialBurst,
    private readonly perSecond = unknownCredentialsPerSecond,
    private readonly now: () => number = Date.now,
    private readonly maxAddresses = 100_000,
  ) {}

  /** Throws 429 rate_limit_exceeded, saying when to retry, if `group` has no lookup left. */
  check(group: string): void {
    const allowance = this.allowanceOf(group)
    if (allowance.lookups < 1) {
      const retryAfterS = Math.max(1, Math.ceil((1 - allowance.lookups) / this.perSecond))
      throw new GatewayError('rate_limit_exceeded', `Too many requests with unknown credentials from this address; retry after ${retryAfterS} s with a valid API key or access token.`, null, retryAfterS)
    }
  }

  /**
   * Holds one lookup of `group` until `end` when a place is free (undefined). Otherwise, while
   * lookups of the address are under way, a promise that resolves when one of them ends: look again
   * then (the credential may be in memory by then, or a place free). 429 when none is under way, or
   * too many of the address's requests wait already.
   */
  take(group: string): void | Promise<void> {
    const allowance = this.allowanceOf(group)
    if (allowance.lookups >= 1) {
      allowance.lookups -= 1
      this.running.set(group, (this.running.get(group) ?? 0) + 1)
      return
    }
    const queue = this.waiting.get(group) ?? []
    if ((this.running.get(group) ?? 0) === 0 || queue.length >= maxWaitingPerAddress) return this.check(group)
    if (queue.length === 0) this.waiting.set(group, queue)
    return new Promise<void>((resolve) => queue.push(resolve))
  }

  /** Ends a lookup `take` let start: a lookup that found its credential gives its place back. */
  end(group: string, found: boolean): void {
    const running = (this.running.get(group) ?? 1) - 1
    if (running > 0) this.running.set(group, running)
    else this.running.delete(group)
    const allowance = this.addresses.get(group)
    if (found && allowance) allowance.lookups = Math.min(this.burst, allowance.lookups + 1)
    // Every waiter looks again: one takes a freed place, the others wait on, or are refused once no
    // lookup of the address is left under way.
    const queue = this.waiting.get(group)
    if (!queue) return
    this.waiting.delete(group)
    for (const wake of queue) wake()
  }

  /** Counts a lookup of `group` that found nothing. The debt is capped, so a wave of them shuts the address out for a bounded time. */
  charge(group: string): void {
    const allowance = this.allowanceOf(group)
    allowance.lookups = Math.max(-this.burst, allowance.lookups - 1)
  }

  /** The group's allowance, refilled up to now. */
  private allowanceOf(group: string): Allowance {
    const now = this.now()
    let allowance = this.addresses.get(group)
    if (!allowance) {
      if (this.addresses.size >= this.maxAddresses) this.forgetFull(now)
      allowance = { lookups: this.burst, updatedMs: now }
      this.addresses.set(group, allowance)
    } else if (now > allowance.updatedMs) {
      allowance.lookups = Math.min(this.burst, allowance.lookups + ((now - allowance.updatedMs) / 1000) * this.perSecond)
      allowance.updatedMs = now
    }
    return allowance
  }

  // Addresses whose allowance has refilled hold nothing worth keeping; they are swept out at most
  // once a second, and when every one is still short the oldest entry goes, so the map stays
  // bounded and cheap under a flood from many addresses.
  private forgetFull(now: number): void {
    if (now - this.sweptAtMs >= 1_000) {
      this.sweptAtMs = now
      for (const [group, allowance] of this.addresses) {
        if (allowance.lookups + ((now - allowance.updatedMs) / 1000) * this.perSecond >= this.burst) this.addresses.delete(group)
      }
    }
    if (this.addresses.size >= this.maxAddresses) {
      const oldest = this.addresses.keys().next().value
      if (oldest !== undefined) this.addresses.delete(oldest)
    }
  }
}
