import { describe, expect, test } from 'bun:test'
import { chatModel, embeddingsModel, testApp } from '../support/test-app'

describe('POST /v1/embeddings', () => {
  test('answers float vectors by default, with usage, and records the request', async () => {
    const { api, usage } = await testApp()

    const { data, status } = await api.v1.embeddings.post({ model: embeddingsModel, input: ['a', 'b'] })

    expect(status).toBe(200)
    expect(data).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0.25, -0.25, -0.75, -1.25] },
        { object: 'embedding', index: 1, embedding: [0.5, 0, -0.5, -1] },
      ],
      model: embeddingsModel,
      usage: { prompt_tokens: 5, total_tokens: 5 },
    })
    expect(usage[0]).toMatchObject({ endpoint: 'embeddings', promptTokens: 5, completionTokens: 0, costMicros: 5n, status: 200 })
  })

  test('answers base64 of little-endian float32 when asked', async () => {
    const { api } = await testApp()

    const { data } = await api.v1.embeddings.post({ model: embeddingsModel, input: 'a', encoding_format: 'base64' })

    const bytes = Buffer.from(data!.data[0]!.embedding as string, 'base64')
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    expect([0, 4, 8, 12].map((offset) => view.getFloat32(offset, true))).toEqual([0.25, -0.25, -0.75, -1.25])
  })

  test('takes token ids and arrays of token ids', async () => {
    const { api, provider } = await testApp()

    await api.v1.embeddings.post({ model: embeddingsModel, input: [1212, 318, 257] })
    await api.v1.embeddings.post({ model: embeddingsModel, input: [[1212, 318], [57668, 53901]] })

    expect(provider.calls.map((call) => call.body)).toEqual([
      { kind: 'tokens', items: [[1212, 318, 257]] },
      { kind: 'tokens', items: [[1212, 318], [57668, 53901]] },
    ])
  })

  test('passes dimensions to the provider', async () => {
    const { api } = await testApp()

    const { data } = await api.v1.embeddings.post({ model: embeddingsModel, input: 'a', dimensions: 2 })

    expect(data!.data[0]!.embedding).toHaveLength(2)
  })

  test.each([
    [{ input: '' }, 'empty_input', 'input'],
    [{ input: [] }, 'empty_input', 'input'],
    [{ input: ['a', ''] }, 'empty_input', 'input[1]'],
    [{ input: [[]] }, 'empty_input', 'input'],
    [{ input: 'x'.repeat(40_000) }, 'input_too_large', 'input'],
    [{ input: Array(2_049).fill('a') }, 'input_too_large', 'input'],
    [{ input: Array(40).fill('y'.repeat(32_000)) }, 'input_too_large', 'input'],
    [{ input: ['a', 1] }, 'invalid_request', 'input'],
    [{ input: 42 }, 'invalid_request', 'input'],
    [{ encoding_format: 'hex' }, 'invalid_request', 'encoding_format'],
    [{ dimensions: 0 }, 'invalid_request', 'dimensions'],
    [{ dimensions: '2' }, 'invalid_request', 'dimensions'],
    [{ input: ['1', 2] }, 'invalid_request', 'input'],
    [{ dimensions: 5000 }, 'invalid_request', 'dimensions'],
    [{ model: chatModel }, 'model_not_supported_on_endpoint', 'model'],
    [{ model: 'nope' }, 'model_not_found', 'model'],
    [{ model: 'm'.repeat(257) }, 'invalid_request', 'model'],
  ])('case %# answers 400 %s', async (overrides, code, param) => {
    const { send, provider } = await testApp()

    const response = await send('POST', '/v1/embeddings', JSON.stringify({ model: embeddingsModel, input: 'a', ...overrides }))

    expect(response.status).toBe(400)
    expect((await response.json()).error).toMatchObject({ code, param })
    expect(provider.calls).toHaveLength(0)
  })

  test('accepts fields of other providers and hands them, with user, to the provider', async () => {
    const { send, provider } = await testApp()

    const response = await send('POST', '/v1/embeddings', JSON.stringify({ model: embeddingsModel, input: 'a', user: 'u-1', truncate_prompt_tokens: 512 }))

    expect(response.status).toBe(200)
    expect(provider.calls[0]!.extra).toEqual({ user: 'u-1', truncate_prompt_tokens: 512 })
  })
})
