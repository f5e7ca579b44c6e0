import { beforeAll, describe, expect, test } from 'bun:test'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { embed, embedMany, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai'
import { useGateway } from '../support/gateway-process'
import { chatModel, embeddingDimensions, embeddingsModel } from './demo-models'
import { openAIViolations } from './openai-conformance'
import { recordWire, type WireRecorder } from './wire-recorder'

const gateway = useGateway({ database: 'pglite' })
let apiKey: string

beforeAll(async () => {
  apiKey = await gateway.current.createApiKey({ balanceEgp: 1000 })
}, 30_000)

/** The provider as its README sets it up for an OpenAI-compatible server, plus the recorder. */
function nilegate(wire: WireRecorder) {
  return createOpenAICompatible({ name: 'nilegate', baseURL: gateway.current.baseUrl, apiKey, includeUsage: true, fetch: wire.fetch })
}

/** A weather tool whose runs leave the city they were asked about in `cities`. */
function weatherTool(cities: string[]) {
  return tool({
    description: 'Current weather of a city',
    inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    execute: async ({ city }) => {
      cities.push(city)
      return { city, celsius: 31 }
    },
  })
}

describe('Vercel AI SDK (@ai-sdk/openai-compatible)', () => {
  test('generateText answers with text and usage', async () => {
    const wire = recordWire()

    const result = await generateText({ model: nilegate(wire)(chatModel), prompt: 'Name a river.', maxRetries: 0 })

    expect(result.text).not.toBe('')
    expect(result.finishReason).toBe('stop')
    expect(result.usage.inputTokens).toBeGreaterThan(0)
    expect(result.usage.totalTokens).toBe(result.usage.inputTokens! + result.usage.outputTokens!)
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('streamText streams the text and reports the usage of the final chunk', async () => {
    const wire = recordWire()

    const result = streamText({ model: nilegate(wire)(chatModel), prompt: 'Name a river.', maxRetries: 0 })
    const pieces: string[] = []
    for await (const piece of result.textStream) pieces.push(piece)

    expect(pieces.length).toBeGreaterThan(1)
    expect(pieces.join('')).toBe(await result.text)
    expect(await result.finishReason).toBe('stop')
    expect((await result.usage).outputTokens).toBeGreaterThan(0)
    expect(wire.exchanges[0]!.requestBody).toMatchObject({ stream: true, stream_options: { include_usage: true } })
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('generateText runs a tool and answers from its result', async () => {
    const wire = recordWire()
    const cities: string[] = []

    const result = await generateText({
      model: nilegate(wire)(chatModel),
      prompt: 'Call get_weather for Cairo, please.',
      tools: { get_weather: weatherTool(cities) },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
    })

    expect(result.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop'])
    expect(cities).toHaveLength(1)
    expect(result.text).not.toBe('')
    expect(wire.exchanges[1]!.requestBody).toMatchObject({ messages: [{ role: 'user' }, { role: 'assistant' }, { role: 'tool' }] })
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('streamText assembles a tool call from streamed deltas, runs it and streams the answer', async () => {
    const wire = recordWire()
    const cities: string[] = []

    const result = streamText({
      model: nilegate(wire)(chatModel),
      prompt: 'Call get_weather for Cairo, please.',
      tools: { get_weather: weatherTool(cities) },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
    })
    const text = await result.text

    expect(wire.exchanges.map((exchange) => exchange.requestBody)).toMatchObject([{ stream: true }, { stream: true }])
    expect((await result.steps).map((step) => step.finishReason)).toEqual(['tool-calls', 'stop'])
    expect(cities).toHaveLength(1)
    expect(text).not.toBe('')
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('embed returns one vector of numbers', async () => {
    const wire = recordWire()

    const { embedding, usage } = await embed({ model: nilegate(wire).embeddingModel(embeddingsModel), value: 'the Nile at Aswan', maxRetries: 0 })

    expect(embedding).toHaveLength(embeddingDimensions)
    expect(typeof embedding[0]).toBe('number')
    expect(usage.tokens).toBeGreaterThan(0)
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('embedMany returns one vector per value, in order', async () => {
    const wire = recordWire()
    const values = ['the Nile at Aswan', 'the Nile delta', 'a felucca at sunset']

    const { embeddings } = await embedMany({ model: nilegate(wire).embeddingModel(embeddingsModel), values, maxRetries: 0 })
    const { embedding: second } = await embed({ model: nilegate(wire).embeddingModel(embeddingsModel), value: values[1]!, maxRetries: 0 })

    expect(embeddings.map((vector) => vector.length)).toEqual([embeddingDimensions, embeddingDimensions, embeddingDimensions])
    expect(embeddings[1]).toEqual(second)
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })
})
