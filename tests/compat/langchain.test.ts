import { beforeAll, describe, expect, test } from 'bun:test'
import { HumanMessage, ToolMessage, type AIMessageChunk } from '@langchain/core/messages'
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai'
import { useGateway } from '../support/gateway-process'
import { chatModel, embeddingDimensions, embeddingsModel } from './demo-models'
import { openAIViolations } from './openai-conformance'
import { recordWire, type WireRecorder } from './wire-recorder'

const gateway = useGateway({ database: 'pglite' })
let apiKey: string

beforeAll(async () => {
  apiKey = await gateway.current.createApiKey({ balanceEgp: 1000 })
}, 30_000)

/** How LangChain's docs point its OpenAI classes at another server: `configuration` is the openai client's options. */
function connection(wire: WireRecorder) {
  return { apiKey, maxRetries: 0, configuration: { baseURL: gateway.current.baseUrl, fetch: wire.fetch } }
}

describe('LangChain (@langchain/openai)', () => {
  test('ChatOpenAI.invoke answers with text and usage metadata', async () => {
    const wire = recordWire()

    const message = await new ChatOpenAI({ model: chatModel, ...connection(wire) }).invoke('Name a river.')

    expect(message.text).not.toBe('')
    expect(message.usage_metadata!.total_tokens).toBe(message.usage_metadata!.input_tokens + message.usage_metadata!.output_tokens)
    expect(message.response_metadata).toMatchObject({ finish_reason: 'stop', model_name: chatModel })
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('ChatOpenAI.stream streams the text, then the usage', async () => {
    const wire = recordWire()

    const chunks: AIMessageChunk[] = []
    for await (const chunk of await new ChatOpenAI({ model: chatModel, ...connection(wire) }).stream('Name a river.')) chunks.push(chunk)

    expect(chunks.filter((chunk) => chunk.text !== '').length).toBeGreaterThan(1)
    const whole = chunks.reduce((sum, chunk) => sum.concat(chunk))
    expect(whole.usage_metadata!.output_tokens).toBeGreaterThan(0)
    expect(wire.exchanges[0]!.requestBody).toMatchObject({ stream: true, stream_options: { include_usage: true } })
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('ChatOpenAI with bound tools: a tool call, then the answer to its ToolMessage', async () => {
    const wire = recordWire()
    const model = new ChatOpenAI({ model: chatModel, ...connection(wire) }).bindTools([
      { type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    ])
    const question = new HumanMessage('Call get_weather for Cairo, please.')

    const call = await model.invoke([question])
    const toolCall = call.tool_calls![0]!
    const answer = await model.invoke([question, call, new ToolMessage({ tool_call_id: toolCall.id!, content: JSON.stringify({ celsius: 31 }) })])

    expect(toolCall).toMatchObject({ name: 'get_weather', args: { city: expect.any(String) } })
    expect(answer.tool_calls ?? []).toEqual([])
    expect(answer.text).not.toBe('')
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })

  test('OpenAIEmbeddings embeds a query and documents with its defaults', async () => {
    const wire = recordWire()
    const embeddings = new OpenAIEmbeddings({ model: embeddingsModel, ...connection(wire) })

    const query = await embeddings.embedQuery('the Nile at Aswan')
    const documents = await embeddings.embedDocuments(['the Nile at Aswan', 'the Nile delta'])

    expect(query).toHaveLength(embeddingDimensions)
    expect(documents.map((vector) => vector.length)).toEqual([embeddingDimensions, embeddingDimensions])
    expect(documents[0]).toEqual(query)
    expect(wire.exchanges.map((exchange) => exchange.requestBody)).toEqual([
      { model: embeddingsModel, input: 'the Nile at Aswan', encoding_format: 'base64' },
      { model: embeddingsModel, input: ['the Nile at Aswan', 'the Nile delta'], encoding_format: 'base64' },
    ])
    expect(await openAIViolations(wire.exchanges)).toEqual([])
  })
})
