import type { ChatCompletionChunk } from '@nilegate/shared/schemas/chat'
import type { ChatChunkIterator, ProviderCall } from '../../core/ports'
import { SseDecoder } from './sse-decoder'
import { hasChoices, isRecord, reportedUsage } from './upstream-answers'
import { upstreamEventError, upstreamMalformedError } from './upstream-errors'
import type { UpstreamExchange } from './upstream-exchange'

const done: IteratorReturnResult<undefined> = { done: true, value: undefined }

/** The most characters one event may take: a chunk is a few hundred; this bounds what is held. */
export const maxEventChars = 16 * 1024 * 1024

/**
 * The chunks of an upstream SSE stream, each handed out as soon as its event is complete, with
 * `model` set to the catalog id. Throws a GatewayError when the upstream sends an error event or
 * something that is not a chunk, stalls past a deadline, or closes before it finished; throws the
 * call's abort reason when the client goes away. `return()` aborts the upstream request.
 */
export class UpstreamChunkStream implements AsyncIterableIterator<ChatCompletionChunk>, ChatChunkIterator {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>
  private readonly decoder = new SseDecoder()
  private queue: ChatCompletionChunk[] = []
  private head = 0
  private state: 'open' | 'ended' | 'failed' | 'returned' = 'open'
  /** Thrown once the chunks received before it were handed out. */
  private failure: unknown = null
  private firstChunkSeen = false
  private readonly startedChoices = new Set<number>()
  private readonly finishedChoices = new Set<number>()

  constructor(
    body: ReadableStream<Uint8Array>,
    private readonly exchange: UpstreamExchange,
    private readonly call: ProviderCall,
  ) {
    this.reader = body.getReader()
    exchange.watch('first token', call.deployment.timeouts.firstTokenMs, exchange.startedAt)
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  async next(): Promise<IteratorResult<ChatCompletionChunk, undefined>> {
    // The idle deadline runs while this call waits for the upstream, not while the consumer is busy.
    const idleFrom = performance.now()
    for (;;) {
      if (this.head < this.queue.length) return { done: false, value: this.nextQueued() }
      if (this.failure !== null) {
        const failure = this.failure
        this.failure = null
        throw failure
      }
      if (this.state !== 'open') return done
      if (this.firstChunkSeen) this.exchange.watch('idle', this.call.deployment.timeouts.idleMs, idleFrom)
      let read: Awaited<ReturnType<typeof this.reader.read>>
      try {
        read = await this.reader.read()
      } catch (error) {
        // return() may have aborted the read while this call waited.
        if (this.isReturned()) return done
        this.fail(this.exchange.failure(error, true))
        continue
      }
      if (this.isReturned()) return done
      if (read.done) {
        this.accept(this.decoder.end())
        if (this.state === 'open') this.endWithoutDone()
      } else {
        this.accept(this.decoder.push(read.value))
        if (this.decoder.buffered > maxEventChars && this.state === 'open') this.fail(upstreamMalformedError(`an event longer than ${maxEventChars} characters`))
      }
      // Once ended, the deadline belongs to drain().
      if (this.head < this.queue.length && this.isOpen()) this.exchange.unwatch()
    }
  }

  /** The chunks decoded and not handed out yet, handed out now; a failure after them stays for `next()`. */
  ready(): ChatCompletionChunk[] {
    if (this.head >= this.queue.length) return []
    const chunks = this.head === 0 ? this.queue : this.queue.slice(this.head)
    this.queue = []
    this.head = 0
    return chunks
  }

  ended(): boolean {
    return this.state === 'ended' && this.head >= this.queue.length
  }

  async return(): Promise<IteratorResult<ChatCompletionChunk, undefined>> {
    if (this.state === 'open') {
      this.state = 'returned'
      this.exchange.close()
    }
    this.queue = []
    this.head = 0
    this.failure = null
    return done
  }

  private isOpen(): boolean {
    return this.state === 'open'
  }

  private isReturned(): boolean {
    return this.state === 'returned'
  }

  private nextQueued(): ChatCompletionChunk {
    const chunk = this.queue[this.head++]!
    if (this.head === this.queue.length) {
      this.queue = []
      this.head = 0
    }
    return chunk
  }

  private accept(events: string[]): void {
    for (const data of events) {
      if (this.state !== 'open') return
      if (data === '[DONE]' || (data.length < 12 && data.trim() === '[DONE]')) {
        this.end()
        return
      }
      let parsed: unknown
      try {
        parsed = JSON.parse(data)
      } catch {
        return this.fail(upstreamMalformedError('an event that is not JSON'))
      }
      if (isRecord(parsed) && parsed.error != null && parsed.error !== false) {
        return this.fail(upstreamEventError(parsed, { upstreamModel: this.call.deployment.upstreamModel, modelId: this.call.model.id }))
      }
      if (!isRecord(parsed) || !Array.isArray(parsed.choices)) return this.fail(upstreamMalformedError('an event that is not a chat completion chunk'))
      if (!hasChoices(parsed.choices, 'delta')) return this.fail(upstreamMalformedError('a chunk whose choices are not deltas'))
      for (const choice of parsed.choices as Record<string, unknown>[]) {
        choice.delta ??= {}
        const index = typeof choice.index === 'number' ? choice.index : 0
        this.startedChoices.add(index)
        if (choice.finish_reason != null) this.finishedChoices.add(index)
      }
      parsed.model = this.call.model.id
      // Usage the gateway cannot bill reads as none reported: the relay then estimates it.
      if (parsed.usage != null) parsed.usage = reportedUsage(parsed.usage)
      this.queue.push(parsed as unknown as ChatCompletionChunk)
      this.firstChunkSeen = true
    }
  }

  /** A stream may end without [DONE] only after every choice it began has finished. */
  private endWithoutDone(): void {
    let finished = this.startedChoices.size > 0
    for (const index of this.startedChoices) if (!this.finishedChoices.has(index)) finished = false
    if (finished) this.end()
    else this.fail(upstreamMalformedError('an incomplete stream: it closed before the answer finished'))
  }

  private end(): void {
    this.state = 'ended'
    void this.drain()
  }

  private fail(error: unknown): void {
    if (this.state === 'open') this.state = 'failed'
    if (this.failure === null) this.failure = error
    this.exchange.close()
  }

  /** Reads what follows [DONE] (normally just the end of the body) so the connection can be reused. */
  private async drain(): Promise<void> {
    this.exchange.watch('idle', this.call.deployment.timeouts.idleMs)
    try {
      while (!(await this.reader.read()).done);
      this.exchange.markBodyRead()
    } catch {
      // Whatever follows [DONE] does not matter.
    } finally {
      this.exchange.close()
    }
  }
}
