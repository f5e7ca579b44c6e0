import { afterEach, describe, expect, test } from 'bun:test'
import { createProviderRegistry } from '../../server/adapters/providers'
import type { CatalogModel, Deployment } from '../../server/core/catalog'
import { EdgeLimiter } from '../../server/core/edge-limiter'
import { Router } from '../../server/core/router'
import {
  catalogModelId,
  type FakeUpstream,
  jsonResponse,
  sseFrame,
  startFakeUpstream,
  upstreamCall,
  upstreamChatRequest,
  upstreamChunk,
  upstreamCompletion,
  upstreamStreamText,
  type UpstreamHandler,
} from '../support/fake-upstream'
import { keyIdentity, testApp } from '../support/test-app'
import { waitFor } from '../support/wait-for'

let upstreams: FakeUpstream[] = []

afterEach(() => {
  for (const upstream of upstreams) upstream.stop()
  upstreams = []
})

/** A fake upstream that answers every chat request the same way, stream or not. */
function healthyUpstream(): FakeUpstream {
  return fakeUpstream((request) =>
    request.body?.stream ? new Response(upstreamStreamText(['Hi', '!']), { headers: { 'content-type': 'text/event-stream' } }) : jsonResponse(upstreamCompletion('Hi!')),
  )
}

function fakeUpstream(handler: UpstreamHandler): FakeUpstream {
  const upstream = startFakeUpstream(handler)
  upstreams.push(upstream)
  return upstream
}

/** One model served by an openai-compatible deployment on each upstream. */
function routedModel(backends: Array<{ upstream: FakeUpstream; weight?: number; region?: string }>, modality: CatalogModel['modality'] = 'chat'): CatalogModel {
  const { model } = upstreamCall(backends[0]!.upstream.baseUrl, { modality })
  const deployments: Deployment[] = backends.map(({ upstream, weight, region }, index) => ({
    ...upstreamCall(upstream.baseUrl).deployment,
    id: `upstream#${index}`,
    weight: weight ?? 1,
    region: region ?? 'EG',
  }))
  return { ...model, deployments }
}

/** A uniform pseudo-random sequence that is the same on every run (mulberry32), so counts do not flake. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** A clock the test moves by hand. */
function clock() {
  let nowMs = 1_000_000
  return { now: () => nowMs, advance: (ms: number) => (nowMs += ms) }
}

// The edge guard's 100 requests a second per key is not what these tests are about.
async function gateway(model: CatalogModel, router: Router = new Router(null, { failureThreshold: 2, cooldownMs: 10_000 })) {
  return { ...(await testApp({ models: [model], providerFor: createProviderRegistry(), router, edge: new EdgeLimiter(100_000) })), router, deployments: model.deployments }
}

type Gateway = Awaited<ReturnType<typeof gateway>>

function chat(app: Gateway, stream = false): Promise<Response> {
  return app.send('POST', '/v1/chat/completions', JSON.stringify(upstreamChatRequest(stream ? { stream: true } : {})))
}

async function readSse(response: Response): Promise<string[]> {
  const text = await response.text()
  return text.split('\n\n').filter(Boolean).map((event) => event.replace(/^data: /, ''))
}

function streamedText(events: string[]): string {
  return events
    .filter((event) => event !== '[DONE]')
    .map((event) => JSON.parse(event))
    .map((event) => event.choices?.[0]?.delta?.content ?? '')
    .join('')
}

describe('routing across deployments', () => {
  test('spreads requests over the upstreams in proportion to the weights', async () => {
    const [a, b, c] = [healthyUpstream(), healthyUpstream(), healthyUpstream()]
    const app = await gateway(routedModel([{ upstream: a, weight: 2 }, { upstream: b }, { upstream: c }]), new Router(null, { random: seededRandom(7) }))

    const statuses: number[] = []
    for (let i = 0; i < 200; i++) statuses.push((await chat(app)).status)

    expect(new Set(statuses)).toEqual(new Set([200]))
    expect(a.requests.length + b.requests.length + c.requests.length).toBe(200)
    expect(a.requests.length).toBeWithin(70, 131)
    expect(b.requests.length).toBeWithin(25, 76)
    expect(c.requests.length).toBeWithin(25, 76)
  })

  test("moves a killed upstream's traffic to the others without a client-visible error", async () => {
    const [a, b, c] = [healthyUpstream(), healthyUpstream(), healthyUpstream()]
    const app = await gateway(routedModel([{ upstream: a }, { upstream: b }, { upstream: c }]))
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
    const [a, b] = [healthyUpstream(), healthyUpstream()]
    const app = await gateway(routedModel([{ upstream: a }, { upstream: b }]))
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
    const a = healthyUpstream()
    const b = fakeUpstream(() => (bIsDown ? jsonResponse({ error: { message: 'overloaded backend crashed' } }, 500) : jsonResponse(upstreamCompletion('Hi!'))))
    const app = await gateway(routedModel([{ upstream: a }, { upstream: b }]), new Router(null, { failureThreshold: 2, cooldownMs: 10_000, now: time.now }))

    await sendUntil(app, () => app.router.isOpen(routedDeployment(app, 1)))
    const failedCalls = b.requests.length
    bIsDown = false
    for (let i = 0; i < 20; i++) expect((await chat(app)).status).toBe(200)
    const duringCooldown = b.requests.length
    time.advance(10_000)
    await sendUntil(app, () => b.requests.length > failedCalls)
    for (let i = 0; i < 40; i++) expect((await chat(app)).status).toBe(200)

    expect(failedCalls).toBe(2)
    expect(duringCooldown).toBe(failedCalls)
    expect(app.router.isOpen(routedDeployment(app, 1))).toBe(false)
    expect(b.requests.length - failedCalls).toBeGreaterThan(5)
  })

  test('fails a stream over when its first chunk fails, with usage recorded once in the serving region', async () => {
    const a = fakeUpstream(() => new Response(sseFrame({ error: { message: 'engine crashed' } }), { headers: { 'content-type': 'text/event-stream' } }))
    const b = healthyUpstream()
    const app = await gateway(routedModel([{ upstream: a, region: 'EG' }, { upstream: b, region: 'DE' }]), new Router(null, { random: () => 0 }))

    const response = await chat(app, true)
    const events = await readSse(response)

    expect(response.status).toBe(200)
    expect(streamedText(events)).toBe('Hi!')
    expect(events.some((event) => event.includes('"error"'))).toBe(false)
    expect([a.requests.length, b.requests.length]).toEqual([1, 1])
    expect(app.usage.map((event) => ({ status: event.status, region: event.region, model: event.model }))).toEqual([{ status: 200, region: 'DE', model: catalogModelId }])
  })

  test('does not fail a stream over once it began: the failure is an error event', async () => {
    const a = fakeUpstream(() =>
      new Response(sseFrame(upstreamChunk({ role: true, content: '' })) + sseFrame(upstreamChunk({ content: 'Hel' })) + sseFrame({ error: { message: 'engine crashed' } }), {
        headers: { 'content-type': 'text/event-stream' },
      }),
    )
    const b = healthyUpstream()
    const app = await gateway(routedModel([{ upstream: a }, { upstream: b }]), new Router(null, { random: () => 0 }))

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
    const a = healthyUpstream()
    const app = await gateway(routedModel([{ upstream: a }]))

    const response = await chat(app, true)
    await response.body!.cancel()

    await waitFor(() => app.usage.length === 1 && app.router.inFlight(routedDeployment(app, 0)) === 0, { what: 'the cancelled stream to settle' })
    expect(app.router.isOpen(routedDeployment(app, 0))).toBe(false)
  })

  test('fails embeddings over to another deployment when the first is overloaded', async () => {
    const a = fakeUpstream(() => jsonResponse({ error: { message: 'server overloaded' } }, 503))
    const b = fakeUpstream(() => jsonResponse({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5, 0.5, 0.5, 0.5] }], model: 'upstream-model', usage: { prompt_tokens: 3, total_tokens: 3 } }))
    const app = await gateway(routedModel([{ upstream: a, region: 'EG' }, { upstream: b, region: 'DE' }], 'embeddings'), new Router(null, { random: () => 0 }))

    const response = await app.send('POST', '/v1/embeddings', JSON.stringify({ model: catalogModelId, input: 'hello', encoding_format: 'float' }))

    expect(response.status).toBe(200)
    expect((await response.json()).data[0].embedding).toEqual([0.5, 0.5, 0.5, 0.5])
    expect([a.requests.length, b.requests.length]).toEqual([1, 1])
    expect(app.usage.map((event) => ({ status: event.status, region: event.region, promptTokens: event.promptTokens }))).toEqual([{ status: 200, region: 'DE', promptTokens: 3 }])
  })

  test('does not fail over on the client\'s own mistake', async () => {
    const a = fakeUpstream(() => jsonResponse({ error: { message: 'temperature must be at most 2', type: 'invalid_request_error', param: 'temperature' } }, 400))
    const b = healthyUpstream()
    const app = await gateway(routedModel([{ upstream: a }, { upstream: b }]), new Router(null, { random: () => 0, failureThreshold: 1 }))

    const response = await chat(app)

    expect(response.status).toBe(400)
    expect(b.requests).toHaveLength(0)
    expect(app.router.isOpen(routedDeployment(app, 0))).toBe(false)
  })
})

/** The deployment of the routed model at `index`, as the app's catalog holds it. */
function routedDeployment(app: Gateway, index: number): Deployment {
  return app.deployments[index]!
}

/** Sends requests one by one until `condition` holds; a bounded number, never a sleep. */
async function sendUntil(app: Gateway, condition: () => boolean, limit = 200): Promise<void> {
  for (let i = 0; i < limit && !condition(); i++) await chat(app)
  expect(condition()).toBe(true)
}

describe('data residency', () => {
  test('an organization that requires EG is served only by EG deployments; with none healthy it gets 503 and nothing leaves the region', async () => {
    const egypt = healthyUpstream()
    const europe = healthyUpstream()
    const model = routedModel([{ upstream: egypt, region: 'EG' }, { upstream: europe, region: 'EU' }])
    const router = new Router(null, { failureThreshold: 1, cooldownMs: 60_000 })
    const app = await testApp({ models: [model], providerFor: createProviderRegistry(), router, edge: new EdgeLimiter(100_000), identity: keyIdentity({ requiresRegion: 'EG' }) })

    const statuses = await Promise.all(Array.from({ length: 20 }, () => chat(app as Gateway).then((response) => response.status)))
    egypt.stop()
    const whileEgyptIsDown = await chat(app as Gateway)
    const afterwards = await chat(app as Gateway)

    expect(statuses).toEqual(Array(20).fill(200))
    expect(egypt.requests).toHaveLength(20)
    expect(europe.requests).toHaveLength(0)
    expect([whileEgyptIsDown.status, afterwards.status]).toEqual([503, 503])
    expect((await afterwards.json()).error).toMatchObject({ code: 'no_healthy_backends', message: expect.stringContaining('region EG') })
    expect(europe.requests).toHaveLength(0)
    expect(app.usage.filter((event) => event.status === 200).every((event) => event.region === 'EG')).toBe(true)
  })
})
