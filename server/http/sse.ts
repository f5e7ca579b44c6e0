import { GatewayError } from '@nilegate/shared/errors'
import type { ChatStreamEvent } from '../core/chat-completions'

const done = 'data: [DONE]\n\n'

function event(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`
}

/**
 * Sends stream events as server-sent events: `data: <json>\n\n` per chunk (the chunks of one event
 * in one write), an error as one `data: {"error":...}` event, always ending with `data: [DONE]`.
 * Each event leaves as soon as it exists. When the client goes away, `onCancel` aborts the upstream
 * work; `onEnd` runs once the stream is over, either way, and also when the events themselves fail.
 *
 * The body is one of Bun's direct streams: each event is written to the response as it comes
 * (what is written in one turn of the event loop leaves together at its end), without the queue,
 * pull and promise a default ReadableStream takes for every chunk.
 */
export function sseResponse(events: AsyncGenerator<ChatStreamEvent, void>, headers: Record<string, string>, onCancel: () => void, onEnd: () => void = () => {}): Response {
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    onEnd()
  }
  const cancel = async () => {
    end()
    onCancel()
    await events.return()
  }
  // The first event is asked for now rather than when the body is first read (a direct stream is
  // pulled only then): the events start, so that a body cancelled before any read still ends them,
  // settling the request.
  let first: Promise<IteratorResult<ChatStreamEvent, void>> | null = events.next()
  first.catch(() => {})
  async function writeEvents(controller: ReadableStreamDirectController): Promise<void> {
    for (;;) {
      let next: IteratorResult<ChatStreamEvent, void>
      const pending = first ?? events.next()
      first = null
      try {
        next = await pending
      } catch (error) {
        // The events fail only on a fault of the gateway's own: the client still gets an error
        // event and the end of the stream, and the stream's place is given back.
        console.error('stream failed', error)
        controller.write(event(new GatewayError('internal_error', 'The stream failed on the server. Retry with backoff.').toBody()))
        next = { done: true, value: undefined }
      }
      if (ended) return
      const text = next.done ? '' : next.value.error ? event(next.value.error.toBody()) : next.value.chunks.map(event).join('')
      // The events are over, or these are their last chunks: they leave with the end, in one write.
      if (next.done || next.value.last) {
        end()
        controller.write(text + done)
        controller.close()
        if (!next.done) await events.return()
        return
      }
      // A client slower than the upstream makes the write wait: the upstream is then read no
      // faster than the client takes what it sent.
      const written = controller.write(text)
      if (typeof written !== 'number') await written
    }
  }
  const source: Bun.DirectUnderlyingSource<string> = {
    type: 'direct',
    async pull(controller: ReadableStreamDirectController) {
      try {
        await writeEvents(controller)
      } catch {
        // Only a write fails here, once the response can take no more: as if the client had left.
        await cancel()
      }
    },
    cancel,
  }
  // The DOM library's ReadableStream, which the project's types use, has no direct overload.
  const body = new ReadableStream(source as unknown as UnderlyingDefaultSource<string>)
  return new Response(body, {
    headers: { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' },
  })
}
