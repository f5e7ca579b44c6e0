/** A governance change that caches on every gateway instance must see. */
export type GovernanceChange =
  /** Something an API key's identity reads changed: a key, project or the organization itself. */
  | { kind: 'organization'; orgId: string }
  /** An operator retired a model or changed a retirement. */
  | { kind: 'model_retirements' }
  /** An operator added or removed a stored deployment. */
  | { kind: 'deployments' }
  /** An operator asked every instance to re-read its catalog file. */
  | { kind: 'catalog_file' }

/** The changes that carry nothing but their kind: each says which stored part of the catalog to read again. */
export const catalogChangeKinds: ReadonlySet<unknown> = new Set(['model_retirements', 'deployments', 'catalog_file'] satisfies GovernanceChange['kind'][])

/**
 * Carries changes to every instance: in process when embedded, Redis pub/sub in production,
 * Postgres LISTEN/NOTIFY on Postgres without Redis (remote-change-bus.ts).
 * `publish` reaches this instance's listeners before it resolves.
 */
export interface ChangeBus {
  publish(change: GovernanceChange): Promise<void>
  subscribe(listener: (change: GovernanceChange) => void): () => void
  /**
   * Names the current unbroken stretch of delivery: the value stays the same while every change
   * that anyone commits reaches this instance's listeners, and moves on after a gap that may have
   * lost some; null while changes may be missed (writers outside the bus's reach, or its connection
   * is down). Caches may keep what they read within one stretch for longer.
   */
  readonly coverage: number | null
}

export interface LocalChangeBusOptions {
  /**
   * This process makes every change to the database, so the bus sees them all: true for the
   * embedded database, which one process holds at a time; false when other instances may share it.
   */
  soleWriter?: boolean
}

/** The bus of a single gateway process. */
export class LocalChangeBus implements ChangeBus {
  private readonly listeners = new Set<(change: GovernanceChange) => void>()
  readonly coverage: number | null

  constructor(options: LocalChangeBusOptions = {}) {
    this.coverage = options.soleWriter ? 0 : null
  }

  async publish(change: GovernanceChange): Promise<void> {
    this.deliver(change)
  }

  /** Hands a change to this instance's listeners; a listener that throws does not stop the others. */
  deliver(change: GovernanceChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change)
      } catch (error) {
        console.error('a governance change listener failed', error)
      }
    }
  }

  subscribe(listener: (change: GovernanceChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}

/**
 * Two buses heard as one: changes are published on `primary` (Redis pub/sub); listeners also hear
 * `announcer`, which carries what the database announces about itself (Postgres triggers), so that
 * edits made straight in the database arrive too. Covers only while both do; a new stretch of
 * either is a new stretch of the pair.
 */
export class JoinedChangeBus implements ChangeBus {
  private stretch = 0
  // The two stretches the current one was counted for.
  private lastPrimary: number | null = null
  private lastAnnouncer: number | null = null

  constructor(
    private readonly primary: ChangeBus,
    private readonly announcer: ChangeBus,
  ) {}

  publish(change: GovernanceChange): Promise<void> {
    return this.primary.publish(change)
  }

  subscribe(listener: (change: GovernanceChange) => void): () => void {
    const fromPrimary = this.primary.subscribe(listener)
    const fromAnnouncer = this.announcer.subscribe(listener)
    return () => {
      fromPrimary()
      fromAnnouncer()
    }
  }

  get coverage(): number | null {
    const primary = this.primary.coverage
    const announcer = this.announcer.coverage
    if (primary === null || announcer === null) return null
    if (primary !== this.lastPrimary || announcer !== this.lastAnnouncer) {
      this.lastPrimary = primary
      this.lastAnnouncer = announcer
      this.stretch += 1
    }
    return this.stretch
  }
}
