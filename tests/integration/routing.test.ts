import { describe, expect, test } from 'bun:test'
import type { Deployment } from '../../server/core/catalog'
import { Router } from '../../server/core/router'
import { catalogModelId, jsonResponse, sseFrame, upstreamChunk, upstreamCompletion } from '../support/fake-upstream'
import { chat, clock, readSse, routedGateway, routedModel, seededRandom, sendUntil, streamedText, useFakeUpstreams, type RoutedGateway } from '../support/routed-gateway'
import { keyIdentity } from '../support/test-app'
import { waitFor } from '../support/wait-for'

const upstreams = useFakeUpstreams()

describe('routing across deployments', () => {
  test('spreads requests over the upstreams in proportion to the weights', async () => {
    const [a, b, c] = [upstreams.healthy(), upstreams.healthy(), upstreams.healthy()]
    const app = await routedGateway(routedModel([{ upstream: a, weight: 2 }, { upstream: b }, { upstream: c }]), { router: new Router({ random: seededRandom(7) }) })

    const statuses: number[] = []
    for (let i = 0; i < 200; i++) statuses.push((await chat(app)).status)

    expect(new Set(statuses)).toEqual(new Set([200]))
    expect(a.requests.length + b.requests.length + c.requests.length).toBe(200)
    expect(a.requests.length).toBeWithin(70, 131)
    expect(b.requests.length).toBeWithin(25, 76)
    expect(c.requests.length).toBeWithin(25, 76)
  })

  test("moves a killed upstream's traffic to the others without a client-visible error", async () => {
    const [a, b, c] = [upstreams.healthy(), upstreams.healthy(), upstreams.healthy()]
    const app = await routedGateway(routedModel([{ upstream: a }, { upstream: b }, { upstream: c }]))
    c.stop()

    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(app, i % 2 === 1)))
    const bodies = await Promise.all(responses.map((response) => response.text()))

    expect(responses.map((response) => response.status)).toEqual(Array(30).fill(200))
    expect(bodies.every((body) => body.includes('Hi'))).toBe(true)
    expect(a.requests.length + b.requests.length).toBe(30)
    expect(app.usage.map((event) => event.status)).toEqual(Array(30).fill(200))
    expect(app.router.isOpen(routedDeployment(app, 2))).toBe(true)
  })

  test('answers 503 no_healthy_backends with Retry-After when every upstream is down', async () => {
    const [a, b] = [upstreams.healthy(), upstreams.healthy()]
    const app = await routedGateway(routedModel([{ upstream: a }, { upstream: b }]))
    a.stop()
    b.stop()

    const responses = [await chat(app), await chat(app), await chat(app, true)]

    for (const response of responses) {
      expect(response.status).toBe(503)
      expect(response.headers.get('retry-after')).toBe('30')
      expect((await response.json()).error.code).toBe('no_healthy_backends')
    }
    expect(app.usage.map((event) => event.status)).toEqual([503, 503, 503])
  })

  test('sends traffic back to a recovered upstream once the cooldown is over', async () => {
    const time = clock()
    let bIsDown = true
    const a = upstreams.healthy()
    const b = upstreams.start(() => (bIsDown ? jsonResponse({ error: { message: 'overloaded backend crashed' } }, 500) : jsonResponse(upstreamCompletion('Hi!'))))
    const app = await routedGateway(routedModel([{ upstream: a }, { upstream: b }]), { router: new Router({ now: time.now }) })

    expect(await sendUntil(app, () => app.router.isOpen(routedDeployment(app, 1)))).toBe(true)
    const failedCalls = b.requests.length
    bIsDown = false
    for (let i = 0; i < 20; i++) expect((await chat(app)).status).toBe(200)
    const duringCooldown = b.requests.length
    time.advance(10_000)
    expect(await sendUntil(app, () => b.requests.length > failedCalls)).toBe(true)
    for (let i = 0; i < 40; i++) expect((await chat(app)).status).toBe(200)

    expect(failedCalls).toBe(2)
    expect(duringCooldown).toBe(failedCalls)
    expect(app.router.isOpen(routedDeployment(app, 1))).toBe(false)
    expect(b.requests.length - failedCalls).toBeGreaterThan(5)
  })

  test('fails a stream over when its first chunk fails, with usage recorded once in the serving region', async () => {
    const a = upstreams.start(() => new Response(sseFrame({ error: { message: 'engine crashed' } }), { headers: { 'content-type': 'text/event-stream' } }))
    const b = upstreams.healthy()
    const app = await routedGateway(routedModel([{ upstream: a, region: 'EG' }, { upstream: b, region: 'DE' }]), { router: new Router({ random: () => 0 }) })

    const response = await chat(app, true)
    const events = await readSse(response)

    expect(response.status).toBe(200)
    expect(streamedText(events)).toBe('Hi!')
    expect(events.some((event) => event.includes('"error"'))).toBe(false)
    expect([a.requests.length, b.requests.length]).toEqual([1, 1])
    expect(app.usage.map((event) => ({ status: event.status, region: event.region, model: event.model }))).toEqual([{ status: 200, region: 'DE', model: catalogModelId }])
  })

  test('does not fail a stream over once it began: the failure is an error event', async () => {
    const a = upstreams.start(() =>
      new Response(sseFrame(upstreamChunk({ role: true, content: '' })) + sseFrame(upstreamChunk({ content: 'Hel' })) + sseFrame({ error: { message: 'engine crashed' } }), {
        headers: { 'content-type': 'text/event-stream' },
      }),
    )
    const b = upstreams.healthy()
    const app = await routedGateway(routedModel([{ upstream: a }, { upstream: b }]), { router: new Router({ random: () => 0 }) })

    const response = await chat(app, true)
    const events = await readSse(response)

    expect(response.status).toBe(200)
    expect(streamedText(events.slice(0, -2))).toBe('Hel')
    expect(JSON.parse(events.at(-2)!).error.code).toBe('no_healthy_backends')
    expect(events.at(-1)).toBe('[DONE]')
    expect(b.requests).toHaveLength(0)
    expect(app.usage.map((event) => event.status)).toEqual([503])
  })

  test('a stream the client cancels at once frees its deployment and records its usage', async () => {
    const a = upstreams.healthy()
    const app = await routedGateway(routedModel([{ upstream: a }]))

    const response = await chat(app, true)
    await response.body!.cancel()

    await waitFor(() => app.usage.length === 1 && app.router.inFlight(routedDeployment(app, 0)) === 0, { what: 'the cancelled stream to settle' })
    expect(app.router.isOpen(routedDeployment(app, 0))).toBe(false)
  })

  test('fails embeddings over to another deployment when the first is overloaded', async () => {
    const a = upstreams.start(() => jsonResponse({ error: { message: 'server overloaded' } }, 503))
    const b = upstreams.start(() => jsonResponse({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5, 0.5, 0.5, 0.5] }], model: 'upstream-model', usage: { prompt_tokens: 3, total_tokens: 3 } }))
    const app = await routedGateway(routedModel([{ upstream: a, region: 'EG' }, { upstream: b, region: 'DE' }], { modality: 'embeddings' }), { router: new Router({ random: () => 0 }) })

    const response = await app.send('POST', '/v1/embeddings', JSON.stringify({ model: catalogModelId, input: 'hello', encoding_format: 'float' }))

    expect(response.status).toBe(200)
    expect((await response.json()).data[0].embedding).toEqual([0.5, 0.5, 0.5, 0.5])
    expect([a.requests.length, b.requests.length]).toEqual([1, 1])
    expect(app.usage.map((event) => ({ status: event.status, region: event.region, promptTokens: event.promptTokens }))).toEqual([{ status: 200, region: 'DE', promptTokens: 3 }])
  })

  test('does not fail over on the client\'s own mistake', async () => {
    const a = upstreams.start(() => jsonResponse({ error: { message: 'temperature must be at most 2', type: 'invalid_request_error', param: 'temperature' } }, 400))
    const b = upstreams.healthy()
    const app = await routedGateway(routedModel([{ upstream: a }, { upstream: b }], { circuit: { failures: 1, cooldownMs: 10_000 } }), { router: new Router({ random: () => 0 }) })

    const response = await chat(app)

    expect(response.status).toBe(400)
    expect(b.requests).toHaveLength(0)
    expect(app.router.isOpen(routedDeployment(app, 0))).toBe(false)
  })
})

/** The deployment of the routed model at `index`, as the app's catalog holds it. */
function routedDeployment(app: RoutedGateway, index: number): Deployment {
  return app.deployments[index]!
}

describe('data residency', () => {
  test('an organization that requires EG is served only by EG deployments; with none healthy it gets 503 and nothing leaves the region', async () => {
    const egypt = upstreams.healthy()
    const europe = upstreams.healthy()
    const model = routedModel([{ upstream: egypt, region: 'EG' }, { upstream: europe, region: 'EU' }], { circuit: { failures: 1, cooldownMs: 60_000 } })
    const app = await routedGateway(model, { identity: keyIdentity({ requiresRegion: 'EG' }) })

    const statuses = await Promise.all(Array.from({ length: 20 }, () => chat(app).then((response) => response.status)))
    egypt.stop()
    const whileEgyptIsDown = await chat(app)
    const afterwards = await chat(app)

    expect(statuses).toEqual(Array(20).fill(200))
    expect(egypt.requests).toHaveLength(20)
    expect(europe.requests).toHaveLength(0)
    expect([whileEgyptIsDown.status, afterwards.status]).toEqual([503, 503])
    expect((await afterwards.json()).error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('region EG') })
    expect(europe.requests).toHaveLength(0)
    expect(app.usage.filter((event) => event.status === 200).every((event) => event.region === 'EG')).toBe(true)
  })
})
