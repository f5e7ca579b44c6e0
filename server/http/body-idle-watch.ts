/** A body being read: the reader counts its chunks, the watch stops it when they stop coming. */
export interface WatchedRead {
  chunks: number
  timedOut: boolean
  /** The chunk count at the watch's last look, and since when it has stayed so (-1: not looked at yet). */
  seenChunks: number
  stillSinceMs: number
  /** Ends the read that timed out. */
  stop: () => void
}

/** What a read of a whole body ends with when the watch stops it. */
export const bodyTimedOut = Symbol('the body stopped arriving')

/**
 * Stops request bodies that stop arriving: a body that gets no chunk for `idleTimeoutMs` is marked
 * timed out and its read ended. One timer looks at every body in flight a few times per timeout,
 * so a chunk costs the reader a counter increment, not a clock read or a timer of its own; a body
 * is stopped between `idleTimeoutMs` and a quarter more after its last chunk. The timer runs only
 * while bodies are being read (and one look after).
 */
export class BodyIdleWatch {
  private readonly reads = new Set<WatchedRead>()
  private timer: ReturnType<typeof setInterval> | null = null
  private readonly lookEveryMs: number

  constructor(
    readonly idleTimeoutMs: number,
    private readonly now: () => number = performance.now.bind(performance),
  ) {
    this.lookEveryMs = Math.max(5, Math.min(1_000, Math.floor(idleTimeoutMs / 4)))
  }

  /** Watches a body read chunk by chunk: `chunks` counts them; a timeout cancels the reader, ending its pending read. */
  watch(reader: ReadableStreamDefaultReader<Uint8Array>): WatchedRead {
    return this.add({ chunks: 0, timedOut: false, seenChunks: -1, stillSinceMs: -1, stop: () => void reader.cancel().catch(() => {}) })
  }

  /**
   * Watches a body read whole (`request.arrayBuffer()`, far cheaper on Bun than a stream): with no
   * chunks to count, the whole of it must come within the timeout, or the answer is `bodyTimedOut`.
   */
  watchWhole(whole: Promise<ArrayBuffer>): Promise<ArrayBuffer | typeof bodyTimedOut> {
    return new Promise((resolve, reject) => {
      const read = this.add({ chunks: 0, timedOut: false, seenChunks: -1, stillSinceMs: -1, stop: () => resolve(bodyTimedOut) })
      whole.then(
        (bytes) => {
          this.reads.delete(read)
          resolve(bytes)
        },
        (error: unknown) => {
          this.reads.delete(read)
          reject(error)
        },
      )
    })
  }

  private add(read: WatchedRead): WatchedRead {
    this.reads.add(read)
    if (this.timer === null) {
      this.timer = setInterval(() => this.look(), this.lookEveryMs)
      // A process with nothing else to do may end while a client holds a body open.
      this.timer.unref?.()
    }
    return read
  }

  unwatch(read: WatchedRead): void {
    this.reads.delete(read)
  }

  private look(): void {
    if (this.reads.size === 0) {
      clearInterval(this.timer!)
      this.timer = null
      return
    }
    const now = this.now()
    for (const read of this.reads) {
      if (read.chunks !== read.seenChunks) {
        read.seenChunks = read.chunks
        read.stillSinceMs = now
      } else if (now - read.stillSinceMs >= this.idleTimeoutMs) {
        read.timedOut = true
        this.reads.delete(read)
        read.stop()
      }
    }
  }
}
