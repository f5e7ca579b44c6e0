import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { catalogFileModel } from '../support/catalog-file-model'
import { createTempDir } from '../support/databases'
import { ControlledStream, jsonResponse, sseFrame, startFakeUpstream, upstreamChunk, upstreamCompletion, upstreamStreamText, type FakeUpstream, type UpstreamHandler } from '../support/fake-upstream'
import { useGateway } from '../support/gateway-process'
import { waitFor } from '../support/wait-for'

const model = 'e2e/reloaded-chat'
const addedModel = 'e2e/added-by-reload'
const keyEnv = 'NILEGATE_E2E_UPSTREAM_KEY'
const secret = 'sk-e2e-upstream-secret'

/** A catalog file: the reloaded model on `deployments`, and `extraModels` more models like it (with their own deployment ids). */
function catalogFile(deployments: Array<{ id: string; upstream: FakeUpstream }>, extraModels: string[] = []) {
  const entry = (id: string) =>
    catalogFileModel({
      id,
      owned_by: 'e2e',
      max_output_tokens: 256,
      output_price_egp: '1',
      deployments: deployments.map(({ id: deploymentId, upstream }) => ({ id: id === model ? deploymentId : `${id}#${deploymentId}`, provider: 'openai-compatible', base_url: upstream.baseUrl, api_key_env: keyEnv })),
    })
  return JSON.stringify({ models: [entry(model), ...extraModels.map(entry)] })
}

const answer: UpstreamHandler = (request) =>
  request.body?.stream ? new Response(upstreamStreamText(['Hi', '!']), { headers: { 'content-type': 'text/event-stream' } }) : jsonResponse(upstreamCompletion('Hi!'))

// The first stream on the primary upstream stays open until the test writes it.
const held = new ControlledStream()
let holding = true
const primary = startFakeUpstream((request) => {
  if (!request.body?.stream || !holding) return answer(request)
  holding = false
  return held.response()
})
const secondary = startFakeUpstream(answer)
const dir = createTempDir('e2e-catalog-reload')
const catalogPath = join(dir.path, 'catalog.json')

const gateway = useGateway(async () => {
  await Bun.write(catalogPath, catalogFile([{ id: 'primary', upstream: primary }]))
  return { database: 'pglite', catalogPath, env: { [keyEnv]: secret } }
})

afterAll(() => {
  primary.stop()
  secondary.stop()
  dir.remove()
})

const chatCalls = (upstream: FakeUpstream) => upstream.requests.filter((request) => request.path === '/v1/chat/completions')

test('SIGHUP re-reads the catalog file without dropping a stream in flight; a file that does not parse changes nothing', async () => {
  const { baseUrl, pid } = gateway.current
  const apiKey = await gateway.current.createApiKey()
  const post = (body: Record<string, unknown>) =>
    fetch(`${baseUrl}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello' }], ...body }) })
  const modelIds = async () => ((await (await fetch(`${baseUrl}/models`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as { data: Array<{ id: string }> }).data.map(({ id }) => id)

  const streaming = post({ stream: true })
  await waitFor(() => chatCalls(primary).length === 1, { what: 'the stream to reach the primary upstream' })
  held.send(sseFrame(upstreamChunk({ role: true, content: 'Hel' })))
  const inFlight = await streaming
  await Bun.write(catalogPath, catalogFile([{ id: 'secondary', upstream: secondary }], [addedModel]))
  process.kill(pid, 'SIGHUP')
  await gateway.current.waitForOutput(/catalog reloaded from/)
  const afterReload = await post({})
  held.send(sseFrame(upstreamChunk({ content: 'lo' })) + upstreamStreamText(['!']))
  held.close()
  const streamed = await inFlight.text()
  const modelsAfterReload = await modelIds()

  await Bun.write(catalogPath, '{"models": [{"id": ')
  process.kill(pid, 'SIGHUP')
  await gateway.current.waitForOutput(/the catalog was not reloaded and stays as it was: .*JSON Parse error/)
  const afterBrokenFile = await post({})
  const modelsAfterBrokenFile = await modelIds()

  expect([inFlight.status, afterReload.status, afterBrokenFile.status]).toEqual([200, 200, 200])
  expect(streamed).not.toContain('"error"')
  expect(streamed.endsWith('data: [DONE]\n\n')).toBe(true)
  expect(
    streamed
      .split('\n\n')
      .filter((event) => event.startsWith('data: {'))
      .map((event) => JSON.parse(event.slice(6)).choices[0]?.delta.content ?? '')
      .join(''),
  ).toBe('Hello!')
  expect([chatCalls(primary).length, chatCalls(secondary).length]).toEqual([1, 2])
  expect(chatCalls(secondary).map((request) => request.headers.get('authorization'))).toEqual([`Bearer ${secret}`, `Bearer ${secret}`])
  expect([modelsAfterReload, modelsAfterBrokenFile]).toEqual([
    [model, addedModel],
    [model, addedModel],
  ])
  expect(gateway.current.output()).not.toContain(secret)
})
