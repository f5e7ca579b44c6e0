import { expect, spyOn, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import type { ChatCompletionChunk } from '@nilegate/shared/schemas/chat'
import type { ChatStreamEvent } from '../../../server/core/chat-completions'
import { sseResponse } from '../../../server/http/sse'

const chunk = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hi' }, logprobs: null, finish_reason: null }] } as ChatCompletionChunk

async function events(response: Response): Promise<string[]> {
  return (await response.text()).split('\n\n').filter(Boolean)
}

test('sends each chunk and an error event as server-sent events, ends with [DONE] and calls onEnd once', async () => {
  async function* stream(): AsyncGenerator<ChatStreamEvent, void> {
    yield { chunks: [chunk] }
    yield { error: new GatewayError('no_healthy_backends', 'The upstream went away.') }
  }
  let ended = 0

  const sent = await events(sseResponse(stream(), {}, () => {}, () => ended++))

  expect(sent).toEqual([`data: ${JSON.stringify(chunk)}`, `data: ${JSON.stringify(new GatewayError('no_healthy_backends', 'The upstream went away.').toBody())}`, 'data: [DONE]'])
  expect(ended).toBe(1)
})

test('events that throw still end the stream with an internal_error event and [DONE], and give the place back', async () => {
  async function* stream(): AsyncGenerator<ChatStreamEvent, void> {
    yield { chunks: [chunk] }
    throw new RangeError('a fault of the gateway')
  }
  let ended = 0
  const logged = spyOn(console, 'error').mockImplementation(() => {})

  const response = sseResponse(stream(), {}, () => {}, () => ended++)
  const sent = await events(response)
  logged.mockRestore()

  expect(sent.map((line) => (line.startsWith('data: {"error"') ? JSON.parse(line.slice(6)).error.code : line))).toEqual([`data: ${JSON.stringify(chunk)}`, 'internal_error', 'data: [DONE]'])
  expect(ended).toBe(1)
})

test('a body cancelled before anything read it still ends the events, and calls onCancel and onEnd once', async () => {
  let finished = false
  async function* stream(): AsyncGenerator<ChatStreamEvent, void> {
    try {
      yield { chunks: [chunk] }
      yield { chunks: [chunk] }
    } finally {
      finished = true
    }
  }
  let cancelled = 0
  let ended = 0

  await sseResponse(stream(), {}, () => cancelled++, () => ended++).body!.cancel()

  expect({ finished, cancelled, ended }).toEqual({ finished: true, cancelled: 1, ended: 1 })
})

test('the last chunks and [DONE] leave in one write, and the events are finished', async () => {
  let finished = false
  async function* stream(): AsyncGenerator<ChatStreamEvent, void> {
    try {
      yield { chunks: [chunk] }
      yield { chunks: [chunk, chunk], last: true }
      yield { chunks: [chunk] }
    } finally {
      finished = true
    }
  }
  let ended = 0

  const reads: string[] = []
  const decoder = new TextDecoder()
  const reader = sseResponse(stream(), {}, () => {}, () => ended++).body!.getReader()
  for (let read = await reader.read(); !read.done; read = await reader.read()) reads.push(decoder.decode(read.value))

  const event = `data: ${JSON.stringify(chunk)}\n\n`
  expect(reads.join('')).toBe(`${event}${event}${event}data: [DONE]\n\n`)
  expect(reads.at(-1)).toEndWith(`${event}${event}data: [DONE]\n\n`)
  expect({ finished, ended }).toEqual({ finished: true, ended: 1 })
})
