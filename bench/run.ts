// The benchmark of the inference core, in one run: non-streamed chat (a) straight to a fake upstream,
// (b) through the gateway to that upstream, (c) through the gateway on its simulator, (d) and (e)
// through bare proxies ((j) the same through Elysia); (f) to (h) streamed chat as (a) to (c); (i) as (b) on a second gateway with
// METRICS=off, for what recording metrics costs; then the time to first streamed byte, direct and
// through the gateway. Prints a table and writes bench/RESULTS.md.
//
//   bun bench/run.ts [--duration 10] [--connections 50] [--threads 1] [--tool wrk|bun] [--keys N] [--metrics-rps 1000]
//                    [--ttfb-requests 200] [--out bench/RESULTS.md | --no-write] [--profile DIR] [--keep-temp]
//                    [--postgres [postgres://postgres@127.0.0.1:5432/postgres]] [--redis [redis://127.0.0.1:6379/10]]
//
// The gateway is only ever spawned (`bun server/main.ts`, `bun server/cli.ts demo --json`), never imported.

import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { chooseLoadTool, runLoadTool, type LoadTool, type LoadToolName } from './load-tool'
import { readMachineInfo } from './machine-info'
import { cpuSeconds, machineBusyPercent, machineCpuSeconds, processesNamed, ProcessGroup, threadCpuSeconds, threadGroups, totalCpuSeconds, waitUntilQuiet, type ThreadGroup } from './process-group'
import { requestsPerSecond, totalErrors } from './load-result'
import { countErrors, renderReport, type BenchReport, type ScenarioOutcome } from './report'
import { measureTtfb, streamedChatBody, type TtfbTarget } from './ttfb'
import { createScratchDatabase, startGateway, type RunningGateway } from './gateway-process'
import { startBareProxy, startUpstream, type RunningUpstream } from './upstream-process'
import { postgresArg, redisArg } from './arg-value'
import { checkMetricsPair, gatewayUsPerRequest, measureMetricsAtRate, metricsOffLabel, startMetricsOffGateway, type FixedRateRounds } from './metrics-cost'

export interface Options {
  durationS: number
  /** Times each scenario is measured; the median round is reported. */
  rounds: number
  connections: number
  threads: number
  tool: LoadToolName | null
  keys: number
  ttfbRequests: number
  ttfbWarmup: number
  outPath: string | null
  profileDir: string | null
  /** A Postgres server to run the gateway on (a scratch database is made and dropped), instead of PGlite. */
  postgresUrl: string | null
  /** A Redis database (flushed before the run) for the admission counters, instead of the in-process store. */
  redisUrl: string | null
  keepTemp: boolean
  /** The rate at which the gateway is measured with and without metrics (0: not at all). */
  metricsRps: number
}

const repoDir = resolve(import.meta.dir, '..')

function parseOptions(args: string[]): Options {
  const value = (name: string) => {
    const index = args.indexOf(`--${name}`)
    return index >= 0 ? args[index + 1] : undefined
  }
  const count = (name: string, fallback: number, minimum = 1) => {
    const raw = value(name)
    const parsed = raw === undefined ? fallback : Number(raw)
    if (!Number.isInteger(parsed) || parsed < minimum) throw new Error(`--${name} must be an integer >= ${minimum}, got ${raw}`)
    return parsed
  }
  const tool = value('tool')
  if (tool !== undefined && tool !== 'wrk' && tool !== 'bun') throw new Error(`--tool must be wrk or bun, got ${tool}`)
  const profile = value('profile')
  return {
    durationS: count('duration', 10),
    rounds: count('rounds', 1),
    connections: count('connections', 50),
    threads: count('threads', 1),
    tool: tool ?? null,
    // The gateway holds each key to 100 requests a second at the edge: 1,000 keys leave room for 100,000 req/s.
    keys: count('keys', 1_000),
    ttfbRequests: count('ttfb-requests', 200),
    ttfbWarmup: count('ttfb-warmup', 20, 0),
    outPath: args.includes('--no-write') ? null : resolve(value('out') ?? join(repoDir, 'bench', 'RESULTS.md')),
    profileDir: profile ? resolve(profile) : null,
    postgresUrl: postgresArg(args),
    redisUrl: redisArg(args),
    keepTemp: args.includes('--keep-temp'),
    metricsRps: count('metrics-rps', 1_000, 0),
  }
}

/** Empties the Redis database at `url`, so a run starts from counters rebuilt from its own ledger. */
export async function flushRedis(url: string): Promise<void> {
  const redis = new Bun.RedisClient(url)
  try {
    await redis.send('FLUSHDB', [])
  } finally {
    redis.close()
  }
}

export function chatBody(model: string): string {
  return JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Say something short.' }] })
}

/**
 * One request before the load: a 200 with a whole 16-token completion (streamed: every event of
 * the stream, its usage chunk saying 16 tokens, and [DONE]), or the reason it is not.
 */
async function checkChat(url: string, body: string, key: string | null): Promise<string | null> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key) headers.authorization = `Bearer ${key}`
  try {
    const response = await fetch(url, { method: 'POST', body, headers, signal: AbortSignal.timeout(10_000) })
    const text = await response.text()
    if (response.status !== 200) return `status ${response.status}: ${text.slice(0, 300)}`
    const completionTokens = JSON.parse(body).stream === true ? streamedCompletionTokens(text) : completedTokens(text)
    if (typeof completionTokens === 'string') return completionTokens
    if (completionTokens !== 16) return `expected 16 completion tokens, got ${completionTokens}`
    return null
  } catch (error) {
    return (error as Error).message
  }
}

function completedTokens(text: string): number | string {
  const answer = JSON.parse(text)
  if (answer.object !== 'chat.completion' || typeof answer.choices?.[0]?.message?.content !== 'string') return `not a chat.completion: ${text.slice(0, 300)}`
  return answer.usage?.completion_tokens
}

function streamedCompletionTokens(text: string): number | string {
  const events = text.split('\n\n').filter(Boolean)
  if (events.at(-1) !== 'data: [DONE]') return `a stream that does not end with [DONE]: ${text.slice(-300)}`
  const chunks = events.slice(0, -1).map((event) => JSON.parse(event.slice('data: '.length)))
  if (chunks.some((chunk) => chunk.object !== 'chat.completion.chunk')) return `not a stream of chat.completion.chunk: ${text.slice(0, 300)}`
  return chunks.at(-1)?.usage?.completion_tokens
}

export interface Scenario {
  id: ScenarioOutcome['id']
  label: string
  url: string
  bodyFile: string
  keysFile: string | null
  firstKey: string | null
  /** The process whose CPU the gateway column shows, when not the gateway. */
  pid?: number
  /** A bare proxy: the local Redis and Postgres are not its to count. */
  usesNoServer?: boolean
}

/** `items` with the scenarios `a` and `b` in each other's place. */
function swapped(items: Scenario[], a: Scenario['id'], b: Scenario['id']): Scenario[] {
  return items.map((item) => (item.id === a ? items.find((other) => other.id === b) : item.id === b ? items.find((other) => other.id === a) : item) ?? item)
}

/** The round with the median throughput, carrying every round's req/s; a round that failed or had errors wins, to be seen. */
export function medianRound(outcomes: ScenarioOutcome[]): ScenarioOutcome {
  const failed = outcomes.find((outcome) => outcome.result === null)
  if (failed || outcomes.length === 1) return failed ?? outcomes[0]!
  const measured = outcomes.map((outcome) => ({ outcome, rps: requestsPerSecond(outcome.result!) })).sort((a, b) => a.rps - b.rps)
  const withErrors = outcomes.find((outcome) => totalErrors(outcome.result!) > 0)
  const shown = withErrors ?? measured[Math.floor((measured.length - 1) / 2)]!.outcome
  return { ...shown, roundsRps: outcomes.map((outcome) => requestsPerSecond(outcome.result!)), roundsGatewayUs: outcomes.map(gatewayUsPerRequest) }
}

export async function measureScenario(
  scenario: Scenario,
  context: {
    tool: LoadTool
    options: Options
    processes: ProcessGroup
    workDir: string
    /** `servers`: the command names of the local Redis and Postgres the gateway uses, by label. */
    pids: { gateway: number | null; upstream: number; servers?: Record<string, string> }
    isWarm: boolean
  },
): Promise<ScenarioOutcome> {
  const { tool, options, processes, workDir, isWarm } = context
  const pids = scenario.pid ? { ...context.pids, gateway: scenario.pid } : context.pids
  const outcome: ScenarioOutcome = { id: scenario.id, label: scenario.label, result: null, notMeasured: null, cpuPercent: { gateway: null, gatewayMain: null, upstream: null } }
  const problem = await checkChat(scenario.url, await Bun.file(scenario.bodyFile).text(), scenario.firstKey)
  if (problem) {
    outcome.notMeasured = `FAILED check: ${problem.replaceAll('|', '/').replaceAll('\n', ' ')}`
    return outcome
  }
  const run = { url: scenario.url, bodyFile: scenario.bodyFile, keysFile: scenario.keysFile, connections: options.connections, threads: options.threads }
  if (!isWarm) {
    const warmupS = Math.max(1, Math.min(3, Math.round(options.durationS / 5)))
    await runLoadTool(tool, { ...run, durationS: warmupS, logPath: join(workDir, `load-${scenario.id}-warmup.log`) }, processes)
  }

  // The machine's time is read first and last, around every process's own: its window holds theirs.
  const machineBefore = await machineCpuSeconds()
  const startedAt = performance.now()
  const cpuBefore = {
    gateway: pids.gateway ? await cpuSeconds(pids.gateway) : null,
    gatewayMain: pids.gateway ? await cpuSeconds(pids.gateway, { mainThread: true }) : null,
    upstream: await cpuSeconds(pids.upstream),
  }
  const threadsBefore = pids.gateway ? await threadCpuSeconds(pids.gateway) : null
  // Looked up now: Postgres starts a process per connection.
  const servers = scenario.usesNoServer ? [] : await Promise.all(Object.entries(pids.servers ?? {}).map(async ([label, name]) => [label, await processesNamed(name)] as const))
  const serversBefore = await Promise.all(servers.map(([, serverPids]) => totalCpuSeconds(serverPids)))
  outcome.result = await runLoadTool(tool, { ...run, durationS: options.durationS, logPath: join(workDir, `load-${scenario.id}-${Date.now()}.log`) }, processes)
  const wallS = (performance.now() - startedAt) / 1000
  const cpuAfter = {
    gateway: pids.gateway ? await cpuSeconds(pids.gateway) : null,
    gatewayMain: pids.gateway ? await cpuSeconds(pids.gateway, { mainThread: true }) : null,
    upstream: await cpuSeconds(pids.upstream),
  }
  const used = (name: keyof typeof cpuBefore) => (cpuAfter[name] === null || cpuBefore[name] === null ? null : cpuAfter[name]! - cpuBefore[name]!)
  const share = (name: keyof typeof cpuBefore) => {
    const seconds = used(name)
    return seconds === null ? null : (seconds / wallS) * 100
  }
  outcome.cpuPercent = { gateway: share('gateway'), gatewayMain: share('gatewayMain'), upstream: share('upstream') }
  const threadsAfter = pids.gateway ? await threadCpuSeconds(pids.gateway) : null
  if (threadsBefore && threadsAfter && outcome.result.requests > 0) {
    const perRequest = (group: ThreadGroup) => (Math.max(0, threadsAfter[group] - threadsBefore[group]) * 1e6) / outcome.result!.requests
    outcome.cpuUsPerRequest = Object.fromEntries(threadGroups.map((group) => [group, perRequest(group)])) as Record<ThreadGroup, number>
  }
  if (servers.length > 0 && outcome.result.requests > 0) {
    const serversAfter = await Promise.all(servers.map(([, serverPids]) => totalCpuSeconds(serverPids)))
    outcome.serverUsPerRequest = Object.fromEntries(servers.map(([name], index) => [name, (Math.max(0, serversAfter[index]! - serversBefore[index]!) * 1e6) / outcome.result!.requests]))
  }
  const { requests } = outcome.result
  const machineAfter = await machineCpuSeconds()
  if (machineBefore && machineAfter && requests > 0) {
    const perRequest = (seconds: number) => (seconds * 1e6) / requests
    const upstreamSeconds = used('upstream')
    outcome.machineUsPerRequest = {
      upstream: upstreamSeconds === null ? null : perRequest(upstreamSeconds),
      loadTool: outcome.result.tool_cpu_us === undefined ? null : outcome.result.tool_cpu_us / requests,
      idle: perRequest(machineAfter.idle - machineBefore.idle),
      total: perRequest(machineAfter.total - machineBefore.total),
    }
  }
  return outcome
}

/** The command names of the Redis and Postgres the gateway uses, when they run on this machine. */
export function localServers(options: Options): Record<string, string> {
  const isLocal = (url: string | null) => url !== null && /^(localhost|127\.0\.0\.1|\[::1\])$/.test(new URL(url).hostname)
  const servers: Record<string, string> = {}
  if (isLocal(options.redisUrl)) servers.Redis = 'redis-server'
  if (isLocal(options.postgresUrl)) servers.Postgres = 'postgres'
  return servers
}

async function main(options: Options, processes: ProcessGroup, workDir: string, afterStop: (() => Promise<void>)[]): Promise<number> {
  const tool = await chooseLoadTool(options.tool)
  console.error(`load tool: ${tool.description}`)
  const notes: string[] = []
  if (tool.name === 'bun') notes.push('wrk was not used: the Bun load tester takes more CPU from the servers, so direct numbers are lower and ratios to them higher than with wrk.')
  // Other work on the machine skews every number; say so in the results.
  const busyBefore = await machineBusyPercent(1_000)
  if (busyBefore !== null && busyBefore > 10) notes.push(`Other work kept the CPUs ${busyBefore.toFixed(0)}% busy in the second before the run.`)

  const upstream: RunningUpstream = await startUpstream(processes, workDir)
  console.error(`fake upstream: ${upstream.baseUrl}`)
  const bareProxy = await startBareProxy(processes, workDir, upstream.baseUrl)
  const socketProxy = await startBareProxy(processes, workDir, upstream.baseUrl, 'socket')
  const elysiaProxy = await startBareProxy(processes, workDir, upstream.baseUrl, 'fetch', 'elysia')
  const relayProxy = await startBareProxy(processes, workDir, upstream.baseUrl, 'fetch', 'bun', 'relay')

  let gateway: RunningGateway | null = null
  let metricsOffGateway: RunningGateway | null = null
  const gatewayMissing = ['server/main.ts', 'server/cli.ts'].filter((path) => !existsSync(join(repoDir, path)))
  if (gatewayMissing.length === 0) {
    let databaseUrl: string | null = null
    if (options.postgresUrl) {
      const scratch = await createScratchDatabase(options.postgresUrl)
      afterStop.push(() => scratch.drop())
      databaseUrl = scratch.url
      notes.push('The gateway ran on Postgres (a scratch database on the local server), not on the embedded PGlite.')
    }
    if (options.redisUrl) {
      await flushRedis(options.redisUrl)
      notes.push('Admission counters lived in Redis (at most two round trips per request: admit and settle, each shared with the requests of the same turn of the event loop), not in process.')
    }
    const launch = { processes, workDir, repoDir, upstreamBaseUrl: upstream.baseUrl, keys: options.keys, profileDir: options.profileDir, databaseUrl, redisUrl: options.redisUrl, env: { METRICS: 'on' } }
    gateway = await startGateway(launch)
    console.error(`gateway: ${gateway.baseUrl} (${databaseUrl ? 'Postgres' : 'embedded'}${options.redisUrl ? ', Redis' : ''}) with ${gateway.keys.length} API key(s)`)
    metricsOffGateway = await startMetricsOffGateway(launch, options.postgresUrl, afterStop)
    console.error(`gateway with METRICS=off: ${metricsOffGateway.baseUrl}`)
    notes.push(`The gateways logged at LOG_LEVEL=${Bun.env.LOG_LEVEL ?? 'info (the default: a line a request)'}, to a file.`)
  } else {
    notes.push(`The gateway was not measured: ${gatewayMissing.join(' and ')} not found.`)
  }

  const files = {
    direct: join(workDir, 'body-direct.json'),
    viaUpstream: join(workDir, 'body-gateway-upstream.json'),
    viaSimulator: join(workDir, 'body-gateway-simulator.json'),
    streamedDirect: join(workDir, 'body-streamed-direct.json'),
    streamedViaUpstream: join(workDir, 'body-streamed-gateway-upstream.json'),
    streamedViaSimulator: join(workDir, 'body-streamed-gateway-simulator.json'),
  }
  await Bun.write(files.direct, chatBody('fake-echo'))
  await Bun.write(files.viaUpstream, chatBody('bench/upstream-echo'))
  await Bun.write(files.viaSimulator, chatBody('bench/simulated'))
  await Bun.write(files.streamedDirect, streamedChatBody('fake-echo'))
  await Bun.write(files.streamedViaUpstream, streamedChatBody('bench/upstream-echo'))
  await Bun.write(files.streamedViaSimulator, streamedChatBody('bench/simulated'))

  // The gateway's scenarios, named once: measured when it runs, listed as skipped when it does not.
  const gatewayScenarios = { b: 'gateway to the fake upstream', c: 'gateway on the simulator', g: 'streamed, gateway to the fake upstream', h: 'streamed, gateway on the simulator', i: metricsOffLabel } as const
  const scenarios: Scenario[] = [
    { id: 'a', label: 'direct to the fake upstream', url: `${upstream.baseUrl}/chat/completions`, bodyFile: files.direct, keysFile: null, firstKey: null },
  ]
  const viaGateway = gateway && { url: `${gateway.baseUrl}/chat/completions`, keysFile: gateway.keysFile, firstKey: gateway.keys[0]! }
  if (viaGateway) {
    scenarios.push({ id: 'b', label: gatewayScenarios.b, bodyFile: files.viaUpstream, ...viaGateway })
    // Beside (b), so that the two meet the same machine.
    if (metricsOffGateway) {
      const { baseUrl, keysFile, keys, pid } = metricsOffGateway
      scenarios.push({ id: 'i', label: gatewayScenarios.i, url: `${baseUrl}/chat/completions`, bodyFile: files.viaUpstream, keysFile, firstKey: keys[0]!, pid })
    }
    scenarios.push({ id: 'c', label: gatewayScenarios.c, bodyFile: files.viaSimulator, ...viaGateway })
  }
  // Its CPU shows in the gateway column.
  scenarios.push({ id: 'd', label: 'bare Bun proxy to the fake upstream (fetch and JSON, nothing else)', url: `${bareProxy.baseUrl}/chat/completions`, bodyFile: files.direct, keysFile: null, firstKey: null, pid: bareProxy.pid, usesNoServer: true })
  scenarios.push({ id: 'e', label: 'bare Bun proxy, upstream over sockets of its own thread (no fetch)', url: `${socketProxy.baseUrl}/chat/completions`, bodyFile: files.direct, keysFile: null, firstKey: null, pid: socketProxy.pid, usesNoServer: true })
  scenarios.push({ id: 'j', label: 'bare Elysia proxy (the gateway\'s hooks and body schema, none of its work)', url: `${elysiaProxy.baseUrl}/chat/completions`, bodyFile: files.direct, keysFile: null, firstKey: null, pid: elysiaProxy.pid, usesNoServer: true })
  // Streams, as most chat is served: 19 events each (the role, 16 tokens, the finish, the usage).
  scenarios.push({ id: 'f', label: 'streamed, direct to the fake upstream', url: `${upstream.baseUrl}/chat/completions`, bodyFile: files.streamedDirect, keysFile: null, firstKey: null })
  if (viaGateway) {
    scenarios.push({ id: 'g', label: gatewayScenarios.g, bodyFile: files.streamedViaUpstream, ...viaGateway })
    scenarios.push({ id: 'h', label: gatewayScenarios.h, bodyFile: files.streamedViaSimulator, ...viaGateway })
  }
  // What streaming costs on Bun before any of the gateway's work, for (g)'s main thread.
  scenarios.push({ id: 'k', label: 'streamed, bare Bun proxy passing the upstream\'s body on', url: `${bareProxy.baseUrl}/chat/completions`, bodyFile: files.streamedDirect, keysFile: null, firstKey: null, pid: bareProxy.pid, usesNoServer: true })
  scenarios.push({ id: 'l', label: 'streamed, bare Bun proxy parsing each event and writing it again', url: `${relayProxy.baseUrl}/chat/completions`, bodyFile: files.streamedDirect, keysFile: null, firstKey: null, pid: relayProxy.pid, usesNoServer: true })

  const outcomes: ScenarioOutcome[] = []
  const pids = { gateway: gateway?.pid ?? null, upstream: upstream.pid, servers: localServers(options) }
  // A server that died (or was killed from outside) turns every later request into an error: say so.
  let deadServer: string | null = null
  const checkServers = async (when: string) => {
    if (deadServer) return
    deadServer = (await upstream.exitReport()) ?? (await bareProxy.exitReport()) ?? (await socketProxy.exitReport()) ?? (await elysiaProxy.exitReport()) ?? (await relayProxy.exitReport()) ?? (await gateway?.exitReport()) ?? (await metricsOffGateway?.exitReport()) ?? null
    if (deadServer) {
      console.error(deadServer)
      notes.push(`${when} ${deadServer.replaceAll('|', '/')}`)
    }
  }
  await checkServers('Before the first scenario')
  // With several rounds the scenarios take turns (a b c a b c ...), so passing noise hits them alike.
  const rounds = scenarios.map(() => [] as ScenarioOutcome[])
  const gatewayPids = [gateway?.pid, metricsOffGateway?.pid].filter((pid) => pid !== undefined)
  for (let round = 1; round <= options.rounds; round++) {
    // (b) and (i) swap places every other round, so that neither always follows the other.
    const order = round % 2 === 0 ? swapped(scenarios, 'b', 'i') : scenarios
    for (const scenario of order) {
      const index = scenarios.indexOf(scenario)
      if (deadServer) {
        rounds[index]!.push({ id: scenario.id, label: scenario.label, result: null, notMeasured: 'FAILED: a server had exited', cpuPercent: { gateway: null, gatewayMain: null, upstream: null } })
        continue
      }
      const roundLabel = options.rounds > 1 ? `, round ${round} of ${options.rounds}` : ''
      console.error(`measuring (${scenario.id}) ${scenario.label} for ${options.durationS} s${roundLabel} ...`)
      // A gateway still writing the last scenario's usage would take the cores from this one.
      await waitUntilQuiet(gatewayPids)
      rounds[index]!.push(await measureScenario(scenario, { tool, options, processes, workDir, pids, isWarm: round > 1 }))
      await checkServers(`During (${scenario.id})`)
    }
  }
  outcomes.push(...rounds.map(medianRound))
  let metricsAtRate: FixedRateRounds | null = null
  if (gateway && metricsOffGateway && !deadServer) {
    const problem = await checkMetricsPair(gateway, metricsOffGateway)
    if (problem) notes.push(problem)
    if (options.metricsRps > 0) {
      const run = { bodyFile: files.viaUpstream, rps: options.metricsRps, durationS: options.durationS, rounds: Math.max(3, options.rounds), processes, workDir }
      metricsAtRate = await measureMetricsAtRate({ on: gateway, off: metricsOffGateway }, run)
      await checkServers('During the metrics pair at a fixed rate')
    }
  }
  for (const [id, label] of Object.entries(gatewayScenarios) as [keyof typeof gatewayScenarios, string][]) {
    if (!gateway) outcomes.push({ id, label, result: null, notMeasured: 'skipped: no gateway', cpuPercent: { gateway: null, gatewayMain: null, upstream: null } })
  }
  outcomes.sort((a, b) => a.id.localeCompare(b.id))

  console.error(`measuring time to first byte (${options.ttfbRequests} streamed requests per target) ...`)
  const ttfbTargets: TtfbTarget[] = [{ name: 'direct to the fake upstream', url: `${upstream.baseUrl}/chat/completions`, body: streamedChatBody('fake-echo') }]
  if (gateway && !deadServer) {
    const url = `${gateway.baseUrl}/chat/completions`
    ttfbTargets.push({ name: 'gateway to the fake upstream', url, body: streamedChatBody('bench/upstream-echo'), keys: gateway.keys })
    ttfbTargets.push({ name: 'gateway on the simulator', url, body: streamedChatBody('bench/simulated'), keys: gateway.keys })
  }
  const ttfb = deadServer ? [] : await measureTtfb(ttfbTargets, options.ttfbRequests, options.ttfbWarmup)
  await checkServers('During the time-to-first-byte probe')

  if (gateway && !deadServer && options.profileDir) {
    await gateway.stop()
    notes.push(`CPU profile of the gateway written to ${options.profileDir}.`)
  }

  const report: BenchReport = {
    date: new Date(),
    machine: readMachineInfo(repoDir),
    tool,
    settings: { durationS: options.durationS, rounds: options.rounds, connections: options.connections, threads: options.threads, keys: gateway?.keys.length ?? 0, ttfbRequests: options.ttfbRequests, redis: options.redisUrl !== null },
    scenarios: outcomes,
    ttfb,
    metricsAtRate,
    notes,
  }
  const markdown = renderReport(report)
  console.log(markdown)
  if (options.outPath) {
    await Bun.write(options.outPath, markdown + '\n')
    console.error(`written to ${options.outPath}`)
  }
  return countErrors(report) > 0 ? 1 : 0
}

if (import.meta.main) {
  const options = parseOptions(Bun.argv.slice(2))
  const workDir = mkdtempSync(join(tmpdir(), 'nilegate-bench-'))
  const processes = new ProcessGroup()
  const afterStop: (() => Promise<void>)[] = []
  let isCleaning = false
  let isInterrupted = false
  const cleanup = async () => {
    if (isCleaning) return
    isCleaning = true
    await processes.stopAll()
    for (const task of afterStop) await task().catch((error) => console.error(`cleanup: ${(error as Error).message}`))
    if (options.keepTemp) console.error(`temporary files kept in ${workDir}`)
    else rmSync(workDir, { recursive: true, force: true })
  }
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.on(signal, () => {
      isInterrupted = true
      void cleanup().finally(() => process.exit(code))
    })
  }
  process.on('exit', () => processes.killAllNow())

  let exitCode = 1
  try {
    exitCode = await main(options, processes, workDir, afterStop)
  } catch (error) {
    if (isInterrupted) {
      console.error('bench interrupted')
    } else {
      console.error(`bench failed: ${(error as Error).stack ?? error}`)
      console.error(`logs: ${workDir} (kept)`)
      options.keepTemp = true
    }
  } finally {
    await cleanup()
  }
  process.exit(exitCode)
}
