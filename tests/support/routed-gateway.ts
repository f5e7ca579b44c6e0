import { afterEach } from 'bun:test'
import { createProviderRegistry } from '../../server/adapters/providers'
import type { CatalogModel, CircuitSettings, Deployment } from '../../server/core/catalog'
import { EdgeLimiter } from '../../server/core/edge-limiter'
import type { ApiKeyIdentity } from '../../server/core/ports'
import { Router } from '../../server/core/router'
import { jsonResponse, startFakeUpstream, upstreamCall, upstreamChatRequest, upstreamCompletion, upstreamStreamText, type FakeUpstream, type UpstreamHandler } from './fake-upstream'
import { testApp } from './test-app'

/**
 * Fake upstreams for the calling test file, each stopped after its test. `healthy()` answers every
 * chat request with "Hi!", streamed or not.
 */
export function useFakeUpstreams() {
  let started: FakeUpstream[] = []
  afterEach(() => {
    for (const upstream of started) upstream.stop()
    started = []
  })
  const start = (handler: UpstreamHandler): FakeUpstream => {
    const upstream = startFakeUpstream(handler)
    started.push(upstream)
    return upstream
  }
  const healthy = (): FakeUpstream =>
    start((request) =>
      request.body?.stream ? new Response(upstreamStreamText(['Hi', '!']), { headers: { 'content-type': 'text/event-stream' } }) : jsonResponse(upstreamCompletion('Hi!')),
    )
  return { start, healthy }
}

/** One upstream of a routed model, and how its deployment differs from the defaults. */
export interface Backend {
  upstream: FakeUpstream
  weight?: number
  region?: string
  maxConcurrent?: number
  timeouts?: Partial<Deployment['timeouts']>
}

/**
 * One model served by an openai-compatible deployment on each upstream (ids `upstream#<index>`);
 * their circuits open after 2 failures and cool down for 10 s unless `circuit` says otherwise.
 */
export function routedModel(backends: Backend[], { modality = 'chat', circuit = { failures: 2, cooldownMs: 10_000 } }: { modality?: CatalogModel['modality']; circuit?: CircuitSettings } = {}): CatalogModel {
  const { model } = upstreamCall(backends[0]!.upstream.baseUrl, { modality })
  const deployments: Deployment[] = backends.map(({ upstream, weight, region, maxConcurrent, timeouts }, index) => ({
    ...upstreamCall(upstream.baseUrl, { timeouts }).deployment,
    id: `upstream#${index}`,
    weight: weight ?? 1,
    region: region ?? 'EG',
    maxConcurrent: maxConcurrent ?? null,
    circuit,
  }))
  return { ...model, deployments }
}

/**
 * The gateway app in process over `model`, with the real providers and `router`. The edge guard's
 * 100 requests a second per key is not what routing tests are about.
 */
export async function routedGateway(model: CatalogModel, { router = new Router(), identity }: { router?: Router; identity?: ApiKeyIdentity } = {}) {
  const app = await testApp({ models: [model], providerFor: createProviderRegistry(), router, edge: new EdgeLimiter(100_000), identity })
  return { ...app, router, deployments: model.deployments }
}

export type RoutedGateway = Awaited<ReturnType<typeof routedGateway>>

/** A chat request for the routed model. */
export function chat(app: RoutedGateway, stream = false): Promise<Response> {
  return app.send('POST', '/v1/chat/completions', JSON.stringify(upstreamChatRequest(stream ? { stream: true } : {})))
}

/** Sends requests one by one until `condition` holds; at most `limit` of them, never a sleep. */
export async function sendUntil(app: RoutedGateway, condition: () => boolean, limit = 200): Promise<boolean> {
  for (let i = 0; i < limit && !condition(); i++) await chat(app)
  return condition()
}

/** The `data:` payloads of a whole SSE response. */
export async function readSse(response: Response): Promise<string[]> {
  const text = await response.text()
  return text.split('\n\n').filter(Boolean).map((event) => event.replace(/^data: /, ''))
}

/** The text of the content deltas of SSE payloads. */
export function streamedText(events: string[]): string {
  return events
    .filter((event) => event !== '[DONE]')
    .map((event) => JSON.parse(event))
    .map((event) => event.choices?.[0]?.delta?.content ?? '')
    .join('')
}

/** A uniform pseudo-random sequence that is the same on every run (mulberry32), so counts do not flake. */
export function seededRandom(seed: number): () => number {
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
export function clock() {
  let nowMs = 1_000_000
  return { now: () => nowMs, advance: (ms: number) => (nowMs += ms) }
}
