import { GatewayError } from '@nilegate/shared/errors'

export interface BodyBudgetShares {
  /** Bytes one client (an API key, a signed-in user, an address) may have in flight at once. */
  clientBytes: number
  /** Bytes all requests without a credential may have in flight together. */
  anonymousBytes: number
}

/**
 * The default shares of a budget: a client gets a quarter of it and anonymous requests half, so
 * that it takes four clients to fill it and requests without a credential never can; but each
 * share holds at least the largest body a client may send (`largestBodyBytes`), or that body
 * could never be sent.
 */
export function defaultShares(limitBytes: number, largestBodyBytes: number, largestAnonymousBodyBytes: number): BodyBudgetShares {
  return {
    clientBytes: Math.max(Math.floor(limitBytes / 4), Math.min(limitBytes, largestBodyBytes)),
    anonymousBytes: Math.max(Math.floor(limitBytes / 2), Math.min(limitBytes, largestAnonymousBodyBytes)),
  }
}

/**
 * Bytes of request bodies being received at once, across all requests of this process, with what
 * each client holds of them: past the whole budget a request gets 503 large_request_backpressure;
 * past its client's share 429, while other clients go on.
 */
export class BodyBudget {
  private inFlightBytes = 0
  private anonymousInFlightBytes = 0
  private readonly byClient = new Map<string, number>()

  constructor(
    readonly limitBytes: number,
    readonly shares: BodyBudgetShares,
  ) {}

  /** Takes `bytes` for `client`, or throws 503 (the budget, or the anonymous part, is spent) or 429 (the client's share is). */
  take(bytes: number, client: string, anonymous: boolean): void {
    if (this.inFlightBytes + bytes > this.limitBytes) throw new GatewayError('large_request_backpressure')
    if (anonymous && this.anonymousInFlightBytes + bytes > this.shares.anonymousBytes) throw new GatewayError('large_request_backpressure')
    const held = this.byClient.get(client) ?? 0
    if (held + bytes > this.shares.clientBytes) {
      throw new GatewayError(
        'rate_limit_exceeded',
        `This ${anonymous ? 'address' : 'credential'} already has ${held} bytes of request bodies in flight; one client may have ${this.shares.clientBytes} at once. Retry when they have been received.`,
        null,
        2,
      )
    }
    this.byClient.set(client, held + bytes)
    this.inFlightBytes += bytes
    if (anonymous) this.anonymousInFlightBytes += bytes
  }

  give(bytes: number, client: string, anonymous: boolean): void {
    const held = (this.byClient.get(client) ?? 0) - bytes
    if (held > 0) this.byClient.set(client, held)
    else this.byClient.delete(client)
    this.inFlightBytes -= bytes
    if (anonymous) this.anonymousInFlightBytes -= bytes
  }

  get used(): number {
    return this.inFlightBytes
  }

  /** What `client` holds now. */
  heldBy(client: string): number {
    return this.byClient.get(client) ?? 0
  }
}
