import { afterEach, describe, expect, test } from 'bun:test'
import { probeDeployment } from '../../server/adapters/providers/probe-deployment'
import { Catalog, defaultRoutingSettings, type CatalogModel, type Deployment } from '../../server/core/catalog'
import { HealthProbes, type DeploymentCheck } from '../../server/core/health-probes'
import { Router } from '../../server/core/router'
import { jsonResponse, upstreamCompletion } from '../support/fake-upstream'
import { chat, clock, routedGateway, routedModel, useFakeUpstreams } from '../support/routed-gateway'
import { waitFor } from '../support/wait-for'

const upstreams = useFakeUpstreams()

/** An upstream the test takes down and brings back (`state.down`): down, it fails its probe and every call. */
function switchableUpstream() {
  const state = { down: false }
  const upstream = upstreams.start((request) => {
    if (state.down) return jsonResponse({ error: { message: 'engine crashed' } }, 503)
    return request.path.endsWith('/models') ? jsonResponse({ object: 'list', data: [{ id: 'upstream-model', object: 'model' }] }) : jsonResponse(upstreamCompletion('Hi!'))
  })
  const calls = () => upstream.requests.filter((request) => request.path.endsWith('/chat/completions')).length
  return { upstream, state, calls }
}

/** Health probes over the routed model's deployments, with the real check unless told otherwise. */
function probesFor(model: CatalogModel, router: Router, options: { check?: DeploymentCheck; probeIntervalMs?: number; concurrency?: number } = {}) {
  const log: string[] = []
  const catalog = new Catalog([model], { ...defaultRoutingSettings, probeIntervalMs: options.probeIntervalMs ?? 10_000 })
  const probes = new HealthProbes(catalog, router, { check: options.check ?? probeDeployment, log: (message) => log.push(message), concurrency: options.concurrency })
  return { probes, log }
}

const probeKeyEnv = 'NILEGATE_TEST_PROBE_KEY'

afterEach(() => {
  delete process.env[probeKeyEnv]
})

describe('active health probes', () => {
  test('a deployment that fails its probe gets no request until a probe succeeds again, cooldown or not', async () => {
    const a = upstreams.healthy()
    const b = switchableUpstream()
    const model = routedModel([{ upstream: a }, { upstream: b.upstream }])
    // The clock never moves: only a probe can bring b back.
    const router = new Router({ now: clock().now })
    const app = await routedGateway(model, { router })
    const { probes, log } = probesFor(model, router)

    b.state.down = true
    await probes.runOnce()
    const whileDown = await Promise.all(Array.from({ length: 20 }, () => chat(app).then((response) => response.status)))
    const callsWhileDown = b.calls()
    b.state.down = false
    await probes.runOnce()
    const afterRecovery = await Promise.all(Array.from({ length: 20 }, () => chat(app).then((response) => response.status)))

    expect(whileDown).toEqual(Array(20).fill(200))
    expect(callsWhileDown).toBe(0)
    expect(afterRecovery).toEqual(Array(20).fill(200))
    expect(b.calls()).toBeGreaterThan(5)
    expect(log).toEqual([
      'deployment upstream#1 failed its health probe (it answered HTTP 503): no traffic until it answers again',
      'deployment upstream#1 answers its health probe again: traffic resumes',
    ])
  })

  test('brings back an upstream that failed calls took out, once a failed probe confirmed it down and a later one succeeds', async () => {
    const a = upstreams.healthy()
    const b = switchableUpstream()
    const model = routedModel([{ upstream: a }, { upstream: b.upstream }])
    const router = new Router({ now: clock().now })
    const app = await routedGateway(model, { router })
    const { probes } = probesFor(model, router)

    b.state.down = true
    const statuses = await Promise.all(Array.from({ length: 10 }, () => chat(app).then((response) => response.status)))
    const openedByCalls = router.isOpen(model.deployments[1]!)
    await probes.runOnce()
    b.state.down = false
    await probes.runOnce()

    expect(statuses).toEqual(Array(10).fill(200))
    expect([openedByCalls, router.isOpen(model.deployments[1]!)]).toEqual([true, false])
  })

  test("sends the deployment's key from its environment variable, and fails without naming the key when the variable is unset", async () => {
    const { upstream } = switchableUpstream()
    const model = routedModel([{ upstream }])
    const deployment: Deployment = { ...model.deployments[0]!, apiKeyEnv: probeKeyEnv }
    process.env[probeKeyEnv] = 'sk-upstream-secret'

    await probeDeployment(deployment)
    delete process.env[probeKeyEnv]
    const unset = await probeDeployment(deployment).catch((error: Error) => error.message)

    expect(upstream.requests.map((request) => [request.method, request.path, request.headers.get('authorization')])).toEqual([['GET', '/v1/models', 'Bearer sk-upstream-secret']])
    expect(unset).toBe(`the environment variable ${probeKeyEnv} that holds its key is not set`)
  })

  test('reports an unreachable upstream or one that does not answer in its connect timeout, without its address', async () => {
    const silent = upstreams.start(async (request) => (await request.aborted, new Response()))
    const gone = upstreams.healthy()
    const model = routedModel([{ upstream: silent, timeouts: { connectMs: 100 } }, { upstream: gone }])
    gone.stop()

    const reasons = await Promise.all(model.deployments.map((deployment) => probeDeployment(deployment).catch((error: Error) => error.message)))

    expect(reasons).toEqual(['no answer within 100 ms', 'it could not be reached'])
  })

  test('never probes the simulator, and probes every other deployment once a round', async () => {
    const upstream = upstreams.healthy()
    const routed = routedModel([{ upstream }, { upstream }])
    const model = { ...routed, deployments: [...routed.deployments, { ...routed.deployments[0]!, id: 'sim', provider: 'simulator' as const, baseUrl: null }] }
    const probed: string[] = []
    const { probes } = probesFor(model, new Router(), { check: async (deployment) => void probed.push(deployment.id) })

    await probes.runOnce()

    expect(probed.sort()).toEqual(['upstream#0', 'upstream#1'])
  })

  test('has at most `concurrency` probes in flight, and probes every deployment in the round', async () => {
    const upstream = upstreams.healthy()
    const routed = routedModel([{ upstream }])
    const model = { ...routed, deployments: Array.from({ length: 7 }, (_, index) => ({ ...routed.deployments[0]!, id: `d${index}` })) }
    let inFlight = 0
    let most = 0
    const probed: string[] = []
    const check = async (deployment: Deployment) => {
      most = Math.max(most, ++inFlight)
      await Bun.sleep(5)
      probed.push(deployment.id)
      inFlight--
    }

    await probesFor(model, new Router(), { check, concurrency: 3 }).probes.runOnce()
    const bounded = { most, probed: probed.sort() }
    most = 0
    probed.length = 0
    await probesFor(model, new Router(), { check }).probes.runOnce()

    expect(bounded).toEqual({ most: 3, probed: ['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6'] })
    expect(most).toBe(7)
  })

  test('runs rounds on its own once started; stop waits for the round in progress', async () => {
    const upstream = upstreams.healthy()
    const model = routedModel([{ upstream }])
    let rounds = 0
    let release!: () => void
    const blocked = new Promise<void>((resolve) => (release = resolve))
    const { probes } = probesFor(model, new Router(), { probeIntervalMs: 5, check: async () => (++rounds === 3 ? blocked : undefined) })

    probes.start()
    await waitFor(() => rounds === 3, { what: 'three rounds of probes' })
    let stopped = false
    const stopping = probes.stop().then(() => (stopped = true))
    await Promise.resolve()
    const stoppedBeforeTheRoundEnded = stopped
    release()
    await stopping

    expect([stoppedBeforeTheRoundEnded, stopped, rounds]).toEqual([false, true, 3])
  })
})
