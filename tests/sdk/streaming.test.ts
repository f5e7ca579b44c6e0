import { describe, expect, test } from 'bun:test'
import { Nilegate, NilegateConnectionError, type ChatCompletionChunk } from '../../sdk/src'
import { rejectionOf } from '../e2e/sdk-client'

const encoder = new TextEncoder()

function chunk(content: string): ChatCompletionChunk {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }] }
}

/**
 * A client whose every request answers 200 with an SSE body written by the test: `write` sends
 * raw text, `end` closes it; `cancelled` resolves with the reason when the client cancels it.
 */
function clientWithStream() {
  let body!: ReadableStreamDefaultController<Uint8Array>
  const cancelled = Promise.withResolvers<unknown>()
  const stream = new ReadableStream<Uint8Array>({
    start: (controller) => void (body = controller),
    cancel: (reason) => cancelled.resolve(reason),
  })
  const ng = new Nilegate({
    baseURL: 'http://localhost/v1',
    apiKey: 'sk-test',
    fetch: async () => new Response(stream, { headers: { 'content-type': 'text/event-stream', 'x-request-id': 'req_1' } }),
  })
  return {
    ng,
    write: (text: string) => body.enqueue(encoder.encode(text)),
    writeBytes: (bytes: Uint8Array) => body.enqueue(bytes),
    end: () => body.close(),
    cancelled: cancelled.promise,
  }
}

const open = (ng: Nilegate, signal?: AbortSignal) => ng.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true }, { signal })

describe('chat completion streams', () => {
  test('reassemble events and characters split anywhere across network reads', async () => {
    const { ng, writeBytes, end } = clientWithStream()
    const wire = encoder.encode(`data: ${JSON.stringify(chunk('النيل '))}\r\n\r\ndata: ${JSON.stringify(chunk('flows'))}\n\n: keep-alive\n\ndata: [DONE]\n\n`)
    for (let at = 0; at < wire.length; at += 7) writeBytes(wire.slice(at, at + 7))
    end()

    const contents: string[] = []
    for await (const received of await open(ng)) contents.push(received.choices[0]!.delta.content!)

    expect(contents).toEqual(['النيل ', 'flows'])
  })

  test('a stream that ends before [DONE] is a NilegateConnectionError', async () => {
    const { ng, write, end } = clientWithStream()
    write(`data: ${JSON.stringify(chunk('Hel'))}\n\n`)
    end()

    const error = await rejectionOf(Array.fromAsync(await open(ng)))

    expect(error).toBeInstanceOf(NilegateConnectionError)
  })

  test('aborting while waiting for the next event ends the loop with its reason and cancels the body', async () => {
    const { ng, write, cancelled } = clientWithStream()
    const controller = new AbortController()
    const reason = new Error('enough')
    write(`data: ${JSON.stringify(chunk('Hel'))}\n\n`)

    const stream = await open(ng, controller.signal)
    const error = rejectionOf(
      (async () => {
        for await (const _ of stream) controller.abort(reason)
      })(),
    )

    expect(await error).toBe(reason)
    expect(await cancelled).toBe(reason)
  })

  test('can be iterated once', async () => {
    const { ng, write } = clientWithStream()
    write('data: [DONE]\n\n')

    const stream = await open(ng)
    await Array.fromAsync(stream)

    expect(await rejectionOf(Array.fromAsync(stream))).toMatchObject({ message: 'A chat completion stream can be iterated only once.' })
  })
})
