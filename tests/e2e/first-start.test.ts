import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import OpenAI from 'openai'
import { createTempDir } from '../support/databases'
import { startGateway } from '../support/gateway-process'
import { chatModel } from '../support/test-app'

const home = createTempDir('first-start')
afterAll(() => home.remove())

test('a first start on an empty DATA_DIR makes the database and a demo tenant and prints its key, which works; the next start prints none', async () => {
  const dataDir = join(home.path, 'data')
  const options = { database: 'pglite', emptyDataDir: true, env: { DATA_DIR: dataDir }, startTimeoutMs: 60_000 } as const

  const first = await startGateway(options)
  let apiKey: string
  try {
    const [, printedKey] = await first.waitForOutput(/OPENAI_API_KEY=(\S+)\n/)
    apiKey = printedKey!
    expect(apiKey).toMatch(/^sk-[A-Za-z0-9]{32,}$/)
    expect(first.output()).toContain(`OPENAI_BASE_URL=${first.baseUrl}`)
    const completion = await new OpenAI({ baseURL: first.baseUrl, apiKey, maxRetries: 0 }).chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'Hello' }] })
    expect(completion.choices[0]!.message.content).toBeTruthy()
  } finally {
    await first.stop()
  }

  const second = await startGateway(options)
  try {
    const models = await new OpenAI({ baseURL: second.baseUrl, apiKey, maxRetries: 0 }).models.list()
    expect(models.data.map((model) => model.id)).toContain(chatModel)
  } finally {
    await second.stop()
  }
  expect(second.output()).toContain('nilegate listening on')
  expect(second.output()).not.toContain('OPENAI_API_KEY=')
}, 120_000)
