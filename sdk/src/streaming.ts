import type { ChatCompletionChunk } from '@nilegate/shared/schemas/chat'
import type { Usage } from '@nilegate/shared/schemas/common'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { errorFromEvent, NilegateConnectionError } from './errors'

/**
 * A streamed chat completion: iterate it once with `for await` for its chunks. Breaking out of the
 * loop, or aborting the call's signal, closes the connection and the gateway stops generating
 * (tokens produced until then are billed). An `error` event is thrown as a NilegateError; the
 * stream is never retried once it has started.
 */
export class ChatCompletionStream implements AsyncIterable<ChatCompletionChunk> {
  /** Token counts of the whole request, from its last chunk: read it after the loop. Null until then, or when `stream_options.include_usage` was false. */
  usage: Usage | null = null
  /** The gateway's `X-Request-Id`. */
  readonly requestId: string | null
  private started = false

  constructor(
    private readonly response: Response,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.requestId = response.headers.get('x-request-id')
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChatCompletionChunk, void, undefined> {
    if (this.started) throw new Error('A chat completion stream can be iterated only once.')
    this.started = true
    if (!this.response.body) throw new NilegateConnectionError('The stream had no body.')
    const events = this.response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
    // Cancelling here, not only in fetch, so that any fetch (a custom one, an in-process app) stops on abort.
    const cancel = () => void events.cancel(this.signal?.reason).catch(() => {})
    this.signal?.addEventListener('abort', cancel, { once: true })
    try {
      for (;;) {
        const { done, value } = await this.read(events)
        if (this.signal?.aborted) throw this.signal.reason
        if (done) throw new NilegateConnectionError('The stream ended before its [DONE] event.')
        if (value.data === '[DONE]') return
        const payload = JSON.parse(value.data) as ChatCompletionChunk | { error: unknown }
        if ('error' in payload) throw errorFromEvent(payload, this.response.headers)
        if (payload.usage) this.usage = payload.usage
        yield payload
      }
    } finally {
      this.signal?.removeEventListener('abort', cancel)
      // Closes the connection when the caller stopped early; after [DONE] there is nothing left to close.
      await events.cancel().catch(() => {})
    }
  }

  /** The next event; the caller's abort as its own reason, a broken connection as NilegateConnectionError. */
  private async read<T>(events: ReadableStreamDefaultReader<T>) {
    try {
      return await events.read()
    } catch (error) {
      if (this.signal?.aborted) throw this.signal.reason
      throw new NilegateConnectionError('The stream broke off.', { cause: error })
    }
  }
}
