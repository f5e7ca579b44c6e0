import { describe, expect, test } from 'bun:test'
import { estimateTextTokens } from '../../server/core/estimate-tokens'
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

  test('takes token ids and arrays of token ids of cl100k_base, and hands the provider their text', async () => {
    const { api, provider } = await testApp()

    await api.v1.embeddings.post({ model: embeddingsModel, input: [15339, 1917] })
    await api.v1.embeddings.post({ model: embeddingsModel, input: [[791, 77290, 374, 1317, 13], [12061, 16552, 11318, 17607, 12061, 96298]] })

    expect(provider.calls.map((call) => call.body)).toEqual([
      { items: ['hello world'], tokens: 2 },
      { items: ['The Nile is long.', 'نهر النيل'], tokens: 11 },
    ])
  })

  test('hands the provider text with the estimate of its tokens that admission held', async () => {
    const { api, provider } = await testApp()

    await api.v1.embeddings.post({ model: embeddingsModel, input: ['The Nile is long.', 'نهر النيل طويل'] })

    expect(provider.calls[0]!.body).toEqual({ items: ['The Nile is long.', 'نهر النيل طويل'], tokens: estimateTextTokens('The Nile is long.') + estimateTextTokens('نهر النيل طويل') })
  })

  test.each([
    [[15339, 100256], 'input[1]'],
    [[15339, 2 ** 40], 'input[1]'],
    [[[15339], [1917, 1917, 200_000]], 'input[1][2]'],
  ])('case %# refuses an id that is no token of cl100k_base, naming it', async (input, param) => {
    const { send, provider, usage } = await testApp()

    const response = await send('POST', '/v1/embeddings', JSON.stringify({ model: embeddingsModel, input }))

    expect(response.status).toBe(400)
    const { error } = await response.json()
    expect(error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error', param })
    expect(error.message).toContain('cl100k_base')
    expect(provider.calls).toHaveLength(0)
    expect(usage).toHaveLength(0)
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
