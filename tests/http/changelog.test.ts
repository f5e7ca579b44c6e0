import { expect, test } from 'bun:test'
import { loadCatalogFile } from '../../server/catalog-file'
import { chatModel, chatRequest, demoCatalogPath, embeddingsModel, retiredModel, testApp } from '../support/test-app'

async function appWithScheduledRetirement() {
  const models = (await loadCatalogFile(demoCatalogPath)).map((model) => (model.id === chatModel ? { ...model, retiresOn: '2099-03-01', replacement: 'nile/llama-3.3-70b-instruct' } : model))
  return testApp({ models })
}

test('a model with a scheduled retirement answers with Deprecation, Sunset and a link to the changelog', async () => {
  const { send } = await appWithScheduledRetirement()
  const plain = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()))
  const streamed = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest({ stream: true })))
  for (const response of [plain, streamed]) {
    expect(response.status).toBe(200)
    expect(response.headers.get('sunset')).toBe('Sun, 01 Mar 2099 00:00:00 GMT')
    expect(response.headers.get('deprecation')).toBe(`@${Date.UTC(2099, 2, 1) / 1000}`)
    expect(response.headers.get('link')).toBe('</v1/changelog>; rel="sunset"')
    await response.text()
  }
})

test('models without a scheduled retirement carry no lifecycle headers', async () => {
  const { send } = await appWithScheduledRetirement()
  const response = await send('POST', '/v1/embeddings', JSON.stringify({ model: embeddingsModel, input: 'hello' }))
  expect(response.status).toBe(200)
  expect([response.headers.get('sunset'), response.headers.get('deprecation')]).toEqual([null, null])
})

test('GET /v1/changelog lists scheduled and past retirements, newest date first, without authentication', async () => {
  const { app } = await appWithScheduledRetirement()
  const response = await app.handle(new Request('http://localhost/v1/changelog'))
  expect(response.status).toBe(200)
  const body = (await response.json()) as { object: string; data: { model: string; status: string; retires_on: string | null; replacement: string | null }[] }
  expect(body.object).toBe('list')
  expect(body.data.map((entry) => [entry.model, entry.status, entry.retires_on, entry.replacement])).toEqual([
    [chatModel, 'scheduled', '2099-03-01', 'nile/llama-3.3-70b-instruct'],
    [retiredModel, 'retired', expect.any(String), expect.any(String)],
  ])
})
