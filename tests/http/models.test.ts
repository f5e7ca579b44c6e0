import { describe, expect, test } from 'bun:test'
import { keyIdentity, retiredModel, testApp } from '../support/test-app'

describe('GET /v1/models', () => {
  test('lists the live catalog in the OpenAI shape with every catalog attribute', async () => {
    const { api } = await testApp()

    const { data, status } = await api.v1.models.get()

    expect(status).toBe(200)
    expect(data!.object).toBe('list')
    expect(data!.data.map((model) => model.id)).not.toContain(retiredModel)
    expect(data!.data.find((model) => model.id === 'nile/llama-3.3-70b-instruct')).toEqual({
      id: 'nile/llama-3.3-70b-instruct',
      object: 'model',
      created: 1733443200,
      owned_by: 'nilegate (simulator)',
      status: 'Live',
      modality: 'Chat',
      context_window: 131072,
      context_window_label: '128K',
      max_output_tokens: 8192,
      region: 'EG',
      weights: 'Open weights',
      published: '6 Dec 2024',
      input_price_egp_per_1m: '30.000000',
      output_price_egp_per_1m: '90.000000',
      monthly_cost_example_egp: '2850.000000',
      prices_are_samples: true,
      shutdown_date: null,
      replacement: null,
    })
  })

  test('retrieves a model whose id contains a slash, raw or percent-encoded', async () => {
    const { send } = await testApp()

    const raw = await send('GET', '/v1/models/nile/bge-m3')
    const encoded = await send('GET', '/v1/models/nile%2Fbge-m3')

    expect((await raw.json()).id).toBe('nile/bge-m3')
    expect((await encoded.json()).embedding_dimensions).toBe(1024)
  })

  test('answers 404 for an unknown model and 403 model_sunset naming the replacement for a retired one', async () => {
    const { send } = await testApp()

    const unknown = await send('GET', '/v1/models/nope')
    const retired = await send('GET', `/v1/models/${retiredModel}`)

    expect(unknown.status).toBe(404)
    expect((await unknown.json()).error.code).toBe('not_found')
    expect(retired.status).toBe(403)
    expect((await retired.json()).error.message).toContain('nile/llama-3.3-70b-instruct')
  })

  test('needs the models.read scope', async () => {
    const { send } = await testApp({ identity: keyIdentity({ scopes: ['chat.completions'] }) })

    const response = await send('GET', '/v1/models')

    expect(response.status).toBe(403)
    expect((await response.json()).error.code).toBe('key_scope_insufficient')
  })
})
