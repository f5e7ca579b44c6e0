import { afterEach, expect, setSystemTime, test } from 'bun:test'
import { parseCatalogFile } from '../../server/catalog-file'
import { chatModel, chatRequest, demoCatalogPath, testApp } from '../support/test-app'

const replacement = 'nile/llama-3.3-70b-instruct'

/** The demo catalog file with `retires_on` (and a replacement) on the chat model, read as the gateway reads a file. */
async function appRetiringOn(retiresOn: string) {
  const file = await Bun.file(demoCatalogPath).json()
  for (const entry of file.models) if (entry.id === chatModel) Object.assign(entry, { retires_on: retiresOn, replacement })
  return testApp({ models: parseCatalogFile(file) })
}

async function changelogEntry(app: Awaited<ReturnType<typeof appRetiringOn>>['app']) {
  const response = await app.handle(new Request('http://localhost/v1/changelog'))
  const body = (await response.json()) as { data: { model: string; status: string; retires_on: string }[] }
  return body.data.find((entry) => entry.model === chatModel)
}

afterEach(() => {
  setSystemTime()
})

test("a file's retires_on date that has passed retires the model: model_sunset, and retired in the changelog", async () => {
  const { app, send } = await appRetiringOn('2024-05-01')

  const response = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()))
  const body = await response.json()

  expect({ status: response.status, sunset: response.headers.get('sunset'), error: body.error }).toEqual({
    status: 403,
    sunset: null,
    error: { type: 'permission_denied', code: 'model_sunset', param: 'model', message: `The model '${chatModel}' was retired on 2024-05-01. Use '${replacement}' instead.` },
  })
  expect(await changelogEntry(app)).toMatchObject({ status: 'retired', retires_on: '2024-05-01' })
})

test("a file's retires_on date retires the model at 00:00 UTC of that day, without a reload", async () => {
  const retiresAtMs = Date.UTC(2031, 0, 1)
  setSystemTime(new Date(retiresAtMs - 1_000))
  const { app, send } = await appRetiringOn('2031-01-01')

  const before = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()))
  const scheduled = await changelogEntry(app)
  setSystemTime(new Date(retiresAtMs))
  const after = await send('POST', '/v1/chat/completions', JSON.stringify(chatRequest()))
  const retired = await changelogEntry(app)

  expect([before.status, before.headers.get('sunset'), scheduled?.status]).toEqual([200, 'Wed, 01 Jan 2031 00:00:00 GMT', 'scheduled'])
  expect([after.status, ((await after.json()) as { error: { code: string } }).error.code, retired?.status]).toEqual([403, 'model_sunset', 'retired'])
})

test('a retires_on that names no day of the calendar is refused when the file is read', async () => {
  const file = await Bun.file(demoCatalogPath).json()
  for (const entry of file.models) if (entry.id === chatModel) entry.retires_on = '2031-02-30'

  expect(() => parseCatalogFile(file)).toThrow(`model ${chatModel}: retires_on 2031-02-30 is not a date of the calendar`)
})
