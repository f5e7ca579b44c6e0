import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { Nilegate, NilegateError, type ChatCompletionChunk } from '../../sdk/src'
import { decodeFloat32Base64 } from '../../sdk/src/resources/embeddings'
import { rejectionOf } from '../e2e/sdk-client'
import { chatModel, embeddingsModel, retiredModel, testApp } from '../support/test-app'

const messages = [{ role: 'user' as const, content: 'Hello there' }]

/** The SDK over the gateway's app in process, recording the URL and body of every request it sends. */
async function sdkOverApp(options: Parameters<typeof testApp>[0] = {}) {
  const gateway = await testApp(options)
  const sent: Array<{ url: string; body: Record<string, unknown> | null }> = []
  const ng = new Nilegate({
    baseURL: 'http://localhost/v1',
    apiKey: gateway.secret,
    fetch: (input, init) => {
      sent.push({ url: String(input), body: typeof init?.body === 'string' ? JSON.parse(init.body) : null })
      return gateway.app.handle(new Request(input, init))
    },
  })
  return { ...gateway, ng, sent }
}

describe('chat completions', () => {
  test('answers a typed completion', async () => {
    const { ng } = await sdkOverApp()

    const completion = await ng.chat.completions.create({ model: chatModel, messages })

    expect(completion).toMatchObject({ object: 'chat.completion', model: chatModel, choices: [{ message: { role: 'assistant', content: 'Hello' } }], usage: { total_tokens: 9 } })
  })

  test('streams typed chunks, asks for usage and keeps it', async () => {
    const { ng, sent } = await sdkOverApp()

    const stream = await ng.chat.completions.create({ model: chatModel, messages, stream: true })
    const chunks: ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)

    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Hello')
    expect(stream.usage).toEqual({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 })
    expect(stream.requestId).toStartWith('req_')
    expect(sent[0]!.body!.stream_options).toEqual({ include_usage: true })
  })

  test('an error event after the first chunks is thrown as a NilegateError, and the stream is not retried', async () => {
    const { ng, provider } = await sdkOverApp()
    provider.failAfterChunks = { count: 1, error: new GatewayError('engine_unavailable') }

    const stream = await ng.chat.completions.create({ model: chatModel, messages, stream: true })
    const contents: string[] = []
    const error = await rejectionOf(
      (async () => {
        for await (const chunk of stream) contents.push(chunk.choices[0]?.delta.content ?? '')
      })(),
    )

    expect(contents.join('')).toBe('Hel')
    expect(error).toBeInstanceOf(NilegateError)
    expect(error).toMatchObject({ status: 503, code: 'engine_unavailable', type: 'service_unavailable', requestId: stream.requestId })
    expect(provider.calls).toHaveLength(1)
  })

  test('a refusal before the stream starts rejects the call itself', async () => {
    const { ng } = await sdkOverApp({ balanceMicros: 0n })

    const error = await rejectionOf(ng.chat.completions.create({ model: chatModel, messages, stream: true }))

    expect(error).toMatchObject({ status: 402, code: 'quota_exceeded', type: 'quota_exceeded' })
  })

  test('breaking out of the loop stops the generation on the gateway', async () => {
    const { ng, provider } = await sdkOverApp()

    for await (const chunk of await ng.chat.completions.create({ model: chatModel, messages, stream: true })) {
      if (chunk.choices[0]?.delta.content) break
    }

    expect(provider.calls[0]!.call.signal.aborted).toBe(true)
  })

  test('aborting the signal mid-stream ends the loop with its reason', async () => {
    const { ng, provider } = await sdkOverApp()
    const controller = new AbortController()
    const reason = new Error('enough')

    const stream = await ng.chat.completions.create({ model: chatModel, messages, stream: true }, { signal: controller.signal })
    const error = await rejectionOf(
      (async () => {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) controller.abort(reason)
      })(),
    )

    expect(error).toBe(reason)
    expect(provider.calls[0]!.call.signal.aborted).toBe(true)
  })
})

describe('embeddings', () => {
  test('asks for base64 on the wire and gives numbers', async () => {
    const { ng, sent } = await sdkOverApp()

    const { data, model } = await ng.embeddings.create({ model: embeddingsModel, input: ['a', 'b'] })

    expect(model).toBe(embeddingsModel)
    expect(data.map((item) => item.embedding)).toEqual([
      [0.25, -0.25, -0.75, -1.25],
      [0.5, 0, -0.5, -1],
    ])
    expect(sent[0]!.body!.encoding_format).toBe('base64')
  })

  test('gives the same numbers when floats travel', async () => {
    const { ng } = await sdkOverApp()

    const { data } = await ng.embeddings.create({ model: embeddingsModel, input: 'a', encoding_format: 'float' })

    expect(data[0]!.embedding).toEqual([0.25, -0.25, -0.75, -1.25])
  })

  test('decodes little-endian float32 whatever the byte order of the machine', () => {
    const bytes = new Uint8Array(8)
    new DataView(bytes.buffer).setFloat32(0, 1.5, true)
    new DataView(bytes.buffer).setFloat32(4, -2, true)

    expect(decodeFloat32Base64(btoa(String.fromCharCode(...bytes)))).toEqual([1.5, -2])
  })
})

describe('models', () => {
  test('lists the models and retrieves one whose id holds a slash, sent as %2F', async () => {
    const { ng, sent } = await sdkOverApp()

    const list = await ng.models.list()
    const model = await ng.models.retrieve(chatModel)

    expect(list.data.map((item) => item.id)).toContain(chatModel)
    expect(model.id).toBe(chatModel)
    expect(sent[1]!.url).toBe(`http://localhost/v1/models/${chatModel.replace('/', '%2F')}`)
  })

  test('lists the model retirements of the changelog, typed', async () => {
    const { ng, sent } = await sdkOverApp()

    const { object, data } = await ng.changelog.list()

    expect(object).toBe('list')
    expect(data.find((retirement) => retirement.model === retiredModel)).toMatchObject({ object: 'model.retirement', status: 'retired' })
    expect(sent[0]!.url).toBe('http://localhost/v1/changelog')
  })

  test('an unknown model is a NilegateError with the catalog code', async () => {
    const { ng } = await sdkOverApp()

    const error = await rejectionOf(ng.models.retrieve('nile/nothing'))

    expect(error).toMatchObject({ status: 404, code: 'not_found', param: 'model', requestId: expect.stringMatching(/^req_/) })
  })
})
