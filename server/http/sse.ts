import { GatewayError } from '@nilegate/shared/errors'
import type { ChatStreamEvent } from '../core/chat-completions'

const encoder = new TextEncoder()
const done = encoder.encode('data: [DONE]\n\n')

function event(data: unknown): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify(data)}\n\n`)
}

/**
 * Sends stream events as server-sent events: `data: <json>\n\n` per chunk, an error as one
 * `data: {"error":...}` event, always ending with `data: [DONE]`. Each event leaves as soon as it
 * exists. When the client goes away, `onCancel` aborts the upstream work; `onEnd` runs once the
 * stream is over, either way, and also when the events themselves fail.
 */
export function sseResponse(events: AsyncGenerator<ChatStreamEvent, void>, headers: Record<string, string>, onCancel: () => void, onEnd: () => void = () => {}): Response {
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: IteratorResult<ChatStreamEvent, void>
      try {
        next = await events.next()
      } catch (error) {
        // The events fail only on a fault of the gateway's own: the client still gets an error
        // event and the end of the stream, and the stream's place is given back.
        console.error('stream failed', error)
        controller.enqueue(event(new GatewayError('internal_error', 'The stream failed on the server. Retry with backoff.').toBody()))
        next = { done: true, value: undefined }
      }
      if (next.done) {
        onEnd()
        controller.enqueue(done)
        controller.close()
      } else if (next.value.error) {
        controller.enqueue(event(next.value.error.toBody()))
      } else {
        controller.enqueue(event(next.value.chunk))
      }
    },
    async cancel() {
      onEnd()
      onCancel()
      await events.return()
    },
  })
  return new Response(body, {
    headers: { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' },
  })
}
