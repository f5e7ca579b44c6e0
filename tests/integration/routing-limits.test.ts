import { describe, expect, test } from 'bun:test'
import { Router } from '../../server/core/router'
import { ControlledStream, jsonResponse, sseFrame, upstreamChunk, upstreamCompletion, upstreamStreamText, type UpstreamHandler } from '../support/fake-upstream'
import { chat, readSse, routedGateway, routedModel, streamedText, useFakeUpstreams } from '../support/routed-gateway'
import { waitFor } from '../support/wait-for'

const upstreams = useFakeUpstreams()

describe('max_concurrent', () => {
  test('never has more requests in flight on a deployment than its max_concurrent: the next one gets 503 engine_unavailable, Retry-After 1', async () => {
    const held: ControlledStream[] = []
    const upstream = upstreams.start(() => {
      if (held.length === 2) return jsonResponse(upstreamCompletion('Hi!'))
      const stream = new ControlledStream()
      held.push(stream)
      return stream.response()
    })
    const app = await routedGateway(routedModel([{ upstream, maxConcurrent: 2 }]))
    const [deployment] = app.deployments

    const streams = [chat(app, true), chat(app, true)]
    await waitFor(() => upstream.requests.length === 2, { what: 'both streams to reach the upstream' })
    const refused = await chat(app)
    held[0]!.send(upstreamStreamText(['Hi', '!']))
    held[0]!.close()
    const first = await streams[0]!
    const firstText = streamedText(await readSse(first))
    await waitFor(() => app.router.inFlight(deployment!) === 1, { what: 'the finished stream to leave the deployment' })
    const afterwards = await chat(app)
    held[1]!.send(upstreamStreamText(['Bye']))
    held[1]!.close()
    await (await streams[1]!).text()

    expect({ status: refused.status, retryAfter: refused.headers.get('retry-after'), code: (await refused.json()).error.code }).toEqual({ status: 503, retryAfter: '1', code: 'engine_unavailable' })
    expect([first.status, firstText, afterwards.status]).toEqual([200, 'Hi!', 200])
    expect(upstream.requests).toHaveLength(3)
    expect(app.router.isOpen(deployment!)).toBe(false)
  })
})

/** How a slow upstream stalls each kind of request, and the deadline that ends it. */
const slowUpstreams: Array<{ timeout: string; stream: boolean; timeouts: Record<string, number>; handler: UpstreamHandler }> = [
  { timeout: 'connect', stream: true, timeouts: { connectMs: 100 }, handler: async (request) => (await request.aborted, new Response()) },
  { timeout: 'first-token', stream: true, timeouts: { firstTokenMs: 100 }, handler: () => new ControlledStream().response() },
  { timeout: 'total', stream: false, timeouts: { totalMs: 150 }, handler: async (request) => (await request.aborted, new Response()) },
]

describe('timeouts of a slow upstream', () => {
  test.each(slowUpstreams)('the $timeout timeout ends the call before any byte reached the client: it fails over and counts against the upstream', async ({ stream, timeouts, handler }) => {
    const slow = upstreams.start(handler)
    const healthy = upstreams.healthy()
    const app = await routedGateway(routedModel([{ upstream: slow, timeouts }, { upstream: healthy }], { circuit: { failures: 1, cooldownMs: 60_000 } }), { router: new Router({ random: () => 0 }) })

    const response = await chat(app, stream)
    const text = stream ? streamedText(await readSse(response)) : (await response.json()).choices[0].message.content

    expect([response.status, text]).toEqual([200, 'Hi!'])
    expect([slow.requests.length, healthy.requests.length]).toEqual([1, 1])
    expect(app.router.isOpen(app.deployments[0]!)).toBe(true)
    expect(app.usage.map((event) => event.status)).toEqual([200])
  })

  test('the idle timeout ends a stream that began with an error event, and does not fail over', async () => {
    const slow = upstreams.start(() => {
      const stream = new ControlledStream()
      stream.send(sseFrame(upstreamChunk({ role: true, content: 'Hel' })))
      return stream.response()
    })
    const healthy = upstreams.healthy()
    const app = await routedGateway(routedModel([{ upstream: slow, timeouts: { idleMs: 100 } }, { upstream: healthy }]), { router: new Router({ random: () => 0 }) })

    const response = await chat(app, true)
    const events = await readSse(response)

    expect([response.status, streamedText(events.slice(0, -2))]).toEqual([200, 'Hel'])
    expect(JSON.parse(events.at(-2)!).error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('idle timeout (100 ms)') })
    expect(events.at(-1)).toBe('[DONE]')
    expect(healthy.requests).toHaveLength(0)
  })
})
