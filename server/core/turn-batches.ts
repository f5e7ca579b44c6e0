interface Queued<Item, Reply> {
  item: Item
  resolve: (reply: Reply) => void
  reject: (error: unknown) => void
}

/**
 * The end of the event loop's current turn, shared by the batchers of one Redis client so that
 * they send together: the callbacks deferred during a turn run in one setImmediate, in order.
 *
 * node-redis writes the commands it was given in a setImmediate of its own. Scheduled from inside
 * the batchers' setImmediate, that one would run only after the loop polls for I/O again: a whole
 * turn later, about half a millisecond on a busy gateway, added to every admission. So when a turn
 * gets its first callback, `beforeEnd` runs right after: given a command to queue (a PING), it
 * puts node-redis's write behind the batches, and they leave in the turn they were made in.
 */
export class TurnEnd {
  private deferred: Array<() => void> = []

  constructor(private readonly beforeEnd?: () => void) {}

  /** Runs `callback` at the end of this turn; one deferred while those run waits for the next. */
  defer(callback: () => void): void {
    this.deferred.push(callback)
    if (this.deferred.length > 1) return
    setImmediate(() => {
      const deferred = this.deferred
      this.deferred = []
      for (const run of deferred) run()
    })
    try {
      this.beforeEnd?.()
    } catch {
      // Only a matter of when the batches leave: they are sent either way.
    }
  }
}

/**
 * Calls gathered until the end of the event loop's turn (`TurnEnd`) and sent together: one `send`
 * per group, of at most `perCall` calls. A script run costs Redis about 6 us and the client about
 * 10 us before it does any work; a call within one costs a tenth of that (the Redis admission
 * store); a statement looking up many API keys costs the database little more than one of a single
 * key (adapters/postgres/key-lookups.ts). `send` answers one reply per item, in order; when it
 * fails, every call it carried fails with its error.
 */
export class TurnBatches<Item, Reply> {
  private groups = new Map<string, Queued<Item, Reply>[]>()
  private scheduled = false

  constructor(
    private readonly perCall: number,
    private readonly send: (items: Item[]) => Promise<Reply[]>,
    private readonly turn: TurnEnd = new TurnEnd(),
  ) {}

  /** Queues `item` with the others of `group` in this turn; resolves with its reply. */
  add(group: string, item: Item): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      let queued = this.groups.get(group)
      if (!queued) this.groups.set(group, (queued = []))
      queued.push({ item, resolve, reject })
      if (this.scheduled) return
      this.scheduled = true
      this.turn.defer(() => this.sendQueued())
    })
  }

  private sendQueued(): void {
    this.scheduled = false
    const groups = this.groups
    this.groups = new Map()
    for (const queued of groups.values()) {
      for (let start = 0; start < queued.length; start += this.perCall) void this.sendSome(queued.slice(start, start + this.perCall))
    }
  }

  private async sendSome(queued: Queued<Item, Reply>[]): Promise<void> {
    try {
      const replies = await this.send(queued.map(({ item }) => item))
      if (replies.length !== queued.length) throw new Error(`${replies.length} replies for ${queued.length} calls`)
      queued.forEach(({ resolve }, index) => resolve(replies[index]!))
    } catch (error) {
      for (const { reject } of queued) reject(error)
    }
  }
}
