import type { ChatStreamEvent } from '../core/chat-completions'

const encoder = new TextEncoder()
const done = encoder.encode('data: [DONE]\n\n')

/**
 * Sends stream events as server-sent events: `data: <json>\n\n` per chunk, an error as one
 * `data: {"error":...}` event, always ending with `data: [DONE]`. Each event leaves as soon as it
 * exists. When the client goes away, `onCancel` aborts the upstream work; `onEnd` runs once the
 * stream is over, either way.
 */
export function sseResponse(events: AsyncGenerator<ChatStreamEvent, void>, headers: Record<string, string>, onCancel: () => void, onEnd: () => void = () => {}): Response {
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done: finished, value } = await events.next()
      if (finished) {
        onEnd()
        controller.enqueue(done)
        controller.close()
      } else if (value.error) {
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(value.error.toBody())}\n\n`))
      } else {
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(value.chunk)}\n\n`))
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
