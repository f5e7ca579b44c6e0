// The gateway's resident memory (VmRSS and VmHWM from /proc): idle after start-up, with --streams
// streamed chats open at once, and every 10 s of --minutes of mixed load (chat, streamed chat,
// embeddings, and requests that fail with 401 and 400), then 30 s after it. Writes
// bench/RESULTS-memory.md, with the targets of the performance issue (150 MB in both cases).
//
//   bun bench/memory.ts [--minutes 10] [--streams 1000] [--rps 1000] [--out bench/RESULTS-memory.md | --no-write]
//                       [--postgres [postgres://postgres@127.0.0.1:5432/postgres]] [--redis [redis://127.0.0.1:6379/10]] [--keep-temp]
//
// The gateway is only ever spawned (`bun server/main.ts`), never imported.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { postgresArg, redisArg } from './arg-value'
import { benchCatalog, createScratchDatabase, startGateway, type RunningGateway } from './gateway-process'
import { readMachineInfo } from './machine-info'
import { loadConcurrency, mixedLoadKinds, prepareMixedLoad } from './memory-load'
import { failuresOf, renderMemoryReport, type GatewayMemory, type MemoryReport, type MemorySample, type MinuteOfLoad } from './memory-report'
import { streamsResultPrefix, type StreamsOutcome } from './memory-streams'
import { ProcessGroup, waitForLogLine, waitUntilQuiet } from './process-group'
import { readProcessMemory, resetPeakRss } from './process-memory'
import { flushRedis } from './run'
import { streamedChatBody } from './ttfb'
import { startUpstream, type RunningUpstream, type UpstreamPace } from './upstream-process'

interface MemoryOptions {
  minutes: number
  streams: number
  /** Requests a second of the mixed load, all kinds together. */
  rps: number
  outPath: string | null
  postgresUrl: string | null
  redisUrl: string | null
  keepTemp: boolean
}

const repoDir = resolve(import.meta.dir, '..')
// The gateway holds each key to 100 requests a second and 400 at once at the edge.
const keyCount = 1_000
// 19 pauses a stream (the role, 16 tokens, the finish, the usage): 7.6 s, longer than opening them all takes.
const streamPace: UpstreamPace = { ttftMs: 0, chunkDelayMs: 400 }
const sampleEveryMs = 10_000
const settleSamples = 3

function parseOptions(args: string[]): MemoryOptions {
  const value = (name: string) => {
    const index = args.indexOf(`--${name}`)
    return index >= 0 ? args[index + 1] : undefined
  }
  const count = (name: string, fallback: number, minimum: number) => {
    const raw = value(name)
    const parsed = raw === undefined ? fallback : Number(raw)
    if (!Number.isInteger(parsed) || parsed < minimum) throw new Error(`--${name} must be an integer >= ${minimum}, got ${raw}`)
    return parsed
  }
  return {
    minutes: count('minutes', 10, 1),
    streams: count('streams', 1_000, 1),
    // At 5% a kind, 20 a second leaves each at least one.
    rps: count('rps', 1_000, 20),
    outPath: args.includes('--no-write') ? null : resolve(value('out') ?? join(repoDir, 'bench', 'RESULTS-memory.md')),
    postgresUrl: postgresArg(args),
    redisUrl: redisArg(args),
    keepTemp: args.includes('--keep-temp'),
  }
}

/** The bench catalog, a chat model on the paced upstream and an embeddings model on the fast one. */
function memoryCatalog(upstreamBaseUrl: string, pacedBaseUrl: string) {
  const catalog = benchCatalog(upstreamBaseUrl)
  const { id: _id, owned_by: _ownedBy, deployments: _deployments, ...chatFields } = catalog.models[0]!
  const slowChat = { id: 'bench/upstream-paced', owned_by: 'bench (paced fake upstream)', ...chatFields, deployments: [{ provider: 'openai-compatible', base_url: pacedBaseUrl, upstream_model: 'fake-echo' }] }
  const embeddings = {
    id: 'bench/upstream-embed',
    owned_by: 'bench (fake upstream)',
    ...chatFields,
    modality: 'embeddings',
    context_window: 8192,
    max_output_tokens: 0,
    output_price_egp: '0',
    embedding_dimensions: 1024,
    deployments: [{ provider: 'openai-compatible', base_url: upstreamBaseUrl, upstream_model: 'fake-embed' }],
  }
  return { models: [...catalog.models, slowChat, embeddings] }
}

/** The soft limit of open files this process got (Bun raises it to the hard limit), or null where /proc does not say. */
function openFilesLimit(): number | null {
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((entry) => entry.startsWith('Max open files'))
  const soft = line?.split(/\s{2,}/)[1]
  return soft === undefined || soft === 'unlimited' ? null : Number(soft)
}

async function memoryOf(gateway: RunningGateway): Promise<GatewayMemory> {
  const memory = await readProcessMemory(gateway.pid)
  if (!memory) throw new Error(`cannot read /proc/${gateway.pid}/status: ${(await gateway.exitReport()) ?? 'the gateway runs, but its status is not readable'}`)
  return { ...memory, heapUsedKiB: await heapUsedKiB(gateway) }
}

/** The main thread's JavaScript heap in use, from prom-client's nodejs_heap_size_used_bytes on GET /metrics; null without metrics. */
async function heapUsedKiB(gateway: RunningGateway): Promise<number | null> {
  try {
    const response = await fetch(`${new URL(gateway.baseUrl).origin}/metrics`, { signal: AbortSignal.timeout(5_000) })
    const bytes = (await response.text()).match(/^nodejs_heap_size_used_bytes (\d+)/m)?.[1]
    return response.ok && bytes ? Number(bytes) / 1024 : null
  } catch {
    return null
  }
}

/**
 * Waits `minMs`, then until VmRSS of the gateway has stayed within 2 MiB over 10 s, or `maxMs` has
 * passed: its allocators give back what start-up or a load freed seconds later, not at once.
 */
async function waitUntilSettled(gateway: RunningGateway, minMs = 30_000, maxMs = 90_000): Promise<void> {
  const startedAt = performance.now()
  const recent: number[] = []
  while (performance.now() - startedAt < maxMs) {
    recent.push((await memoryOf(gateway)).rssKiB)
    if (recent.length > 3) recent.shift()
    if (performance.now() - startedAt >= minMs && recent.length === 3 && Math.max(...recent) - Math.min(...recent) < 2 * 1024) return
    await Bun.sleep(5_000)
  }
}

/** Throws when a server has exited: every figure after that would be of nothing. */
async function checkServers(servers: { exitReport(): Promise<string | null> }[], when: string): Promise<void> {
  for (const server of servers) {
    const report = await server.exitReport()
    if (report) throw new Error(`${when}: ${report}`)
  }
}

/** Opens --streams streams at once from bench/memory-streams.ts, reads the gateway's memory while all are open, then lets them end. */
async function measureStreams(options: MemoryOptions, gateway: RunningGateway, processes: ProcessGroup, workDir: string): Promise<MemoryReport['streams']> {
  const bodyFile = join(workDir, 'body-streams.json')
  await Bun.write(bodyFile, streamedChatBody('bench/upstream-paced'))
  const logPath = join(workDir, 'memory-streams.log')
  const cmd = ['bun', join(import.meta.dir, 'memory-streams.ts'), '--url', `${gateway.baseUrl}/chat/completions`, '--keys', gateway.keysFile, '--body-file', bodyFile, '--streams', String(options.streams)]
  const env = { ...Bun.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(Math.max(8192, options.streams + 64)) } as Record<string, string>
  const child = processes.spawn(cmd, { env, logPath })
  const [, opened] = await waitForLogLine(logPath, /streams open: (\d+) of/, child, 120_000)
  const memory = await memoryOf(gateway)
  child.kill('SIGUSR1')
  // Streams that all ended before the signal leave a child that has exited: none was open.
  const stillOpen = await waitForLogLine(logPath, /still open: (\d+)/, child, 10_000).then(
    ([, count]) => Number(count),
    (error) => {
      if (child.exitCode === null) throw error
      return 0
    },
  )
  console.error(`${opened} of ${options.streams} streams open, ${stillOpen} still at the sample: VmRSS ${(memory.rssKiB / 1024).toFixed(1)} MiB`)
  const exitCode = await child.exited
  const output = await Bun.file(logPath).text()
  const resultLine = output.split('\n').find((line) => line.startsWith(streamsResultPrefix))
  if (exitCode !== 0 || !resultLine) throw new Error(`bench/memory-streams.ts exited with ${exitCode}:\n${output.slice(-2000)}`)
  const outcome = JSON.parse(resultLine.slice(streamsResultPrefix.length)) as StreamsOutcome
  return { outcome, memory, stillOpen, peakKiB: (await memoryOf(gateway)).peakKiB }
}

const loadKinds = mixedLoadKinds('bench/upstream-echo', 'bench/upstream-embed')

/** --minutes of the mixed load with VmRSS every 10 s and at each minute's end, then 30 s of rest. */
async function measureLoad(options: MemoryOptions, gateway: RunningGateway, servers: RunningUpstream[], processes: ProcessGroup, workDir: string): Promise<MemoryReport['load']> {
  const load = await prepareMixedLoad(loadKinds, gateway, options.rps, processes, workDir)
  await waitUntilQuiet([gateway.pid])
  await waitUntilSettled(gateway)
  const before = await memoryOf(gateway)
  resetPeakRss(gateway.pid)

  const startedAt = performance.now()
  const samples: MemorySample[] = []
  let isLoading = true
  void (async () => {
    for (let atMs = sampleEveryMs; ; atMs += sampleEveryMs) {
      await Bun.sleep(Math.max(0, startedAt + atMs - performance.now()))
      if (!isLoading) return
      const memory = await readProcessMemory(gateway.pid)
      if (memory) samples.push({ atS: atMs / 1000, rssKiB: memory.rssKiB, heapUsedKiB: await heapUsedKiB(gateway) })
    }
  })()
  const minutes: MinuteOfLoad[] = []
  try {
    for (let minute = 1; minute <= options.minutes; minute++) {
      const byKind = await load.runMinute(minute)
      const { rssKiB, heapUsedKiB } = await memoryOf(gateway)
      minutes.push({ minute, rssKiB, heapUsedKiB, byKind })
      const sent = Object.values(byKind).reduce((sum, kind) => sum + kind.sent, 0)
      console.error(`minute ${minute} of ${options.minutes}: ${sent} requests, VmRSS ${(rssKiB / 1024).toFixed(1)} MiB`)
      await checkServers([gateway, ...servers], `during minute ${minute} of the load`)
    }
  } finally {
    isLoading = false
  }
  const end = await memoryOf(gateway)
  const settled: MemorySample[] = []
  for (let index = 1; index <= settleSamples; index++) {
    await Bun.sleep(sampleEveryMs)
    const { rssKiB, heapUsedKiB } = await memoryOf(gateway)
    settled.push({ atS: (index * sampleEveryMs) / 1000, rssKiB, heapUsedKiB })
  }
  return { before, samples, minutes, end, peakKiB: end.peakKiB, settled }
}

async function main(options: MemoryOptions, processes: ProcessGroup, workDir: string, afterStop: (() => Promise<void>)[]): Promise<number> {
  // The gateway holds each stream's client and upstream sockets.
  const filesNeeded = 2 * options.streams + 512
  const filesLimit = openFilesLimit()
  if (filesLimit !== null && filesLimit < filesNeeded) {
    throw new Error(`--streams ${options.streams} needs about ${filesNeeded} open files in the gateway, but the limit is ${filesLimit}: raise the hard limit (ulimit -Hn, LimitNOFILE) or lower --streams`)
  }
  const notes: string[] = []
  const upstream = await startUpstream(processes, workDir)
  const paced = await startUpstream(processes, workDir, streamPace)
  console.error(`fake upstreams: ${upstream.baseUrl}, paced ${paced.baseUrl}`)
  let databaseUrl: string | null = null
  if (options.postgresUrl) {
    const scratch = await createScratchDatabase(options.postgresUrl)
    afterStop.push(() => scratch.drop())
    databaseUrl = scratch.url
  }
  if (options.redisUrl) await flushRedis(options.redisUrl)
  const catalog = memoryCatalog(upstream.baseUrl, paced.baseUrl)
  const gateway = await startGateway({ processes, workDir, repoDir, upstreamBaseUrl: upstream.baseUrl, keys: keyCount, profileDir: null, databaseUrl, redisUrl: options.redisUrl, catalog })
  const database = `${databaseUrl ? 'Postgres (a scratch database)' : 'the embedded PGlite'}${options.redisUrl ? ', admission in Redis' : ', admission in process'}`
  console.error(`gateway: ${gateway.baseUrl} (${database}) with ${gateway.keys.length} API keys`)
  if (!databaseUrl) notes.push('The embedded PGlite runs in the gateway\'s process (a Worker holding its WebAssembly memory), so its memory is in every figure; `--postgres` measures the gateway without it.')
  notes.push(`The gateway logged at LOG_LEVEL=${Bun.env.LOG_LEVEL ?? 'info (the default: a line a request)'}, to a file.`)
  const servers = [gateway, upstream, paced]

  await waitUntilQuiet([gateway.pid])
  await waitUntilSettled(gateway)
  const idle = await memoryOf(gateway)
  console.error(`idle: VmRSS ${(idle.rssKiB / 1024).toFixed(1)} MiB`)
  const peaksArePerPhase = resetPeakRss(gateway.pid)
  if (!peaksArePerPhase) notes.push(`/proc/${gateway.pid}/clear_refs could not be written: every peak is VmHWM since start-up.`)
  console.error(`opening ${options.streams} streams at once ...`)
  const streams = await measureStreams(options, gateway, processes, workDir)
  await checkServers(servers, 'after the streams')
  console.error(`mixed load for ${options.minutes} minute(s) at ${options.rps} req/s ...`)
  const load = await measureLoad(options, gateway, [upstream, paced], processes, workDir)

  const args = Bun.argv.slice(2)
  const report: MemoryReport = {
    date: new Date(),
    machine: readMachineInfo(repoDir),
    command: `bun bench/memory.ts${args.length ? ` ${args.join(' ')}` : ''}`,
    settings: {
      minutes: options.minutes,
      streams: options.streams,
      rps: options.rps,
      concurrency: loadConcurrency,
      keys: gateway.keys.length,
      kinds: loadKinds.map(({ name, share }) => ({ name, share })),
      streamPace: `${streamPace.ttftMs} ms before its first chunk and ${streamPace.chunkDelayMs} ms between chunks (19 pauses)`,
      database,
    },
    idle,
    streams,
    load,
    peaksArePerPhase,
    notes,
  }
  const markdown = renderMemoryReport(report)
  console.log(markdown)
  if (options.outPath) {
    await Bun.write(options.outPath, markdown + '\n')
    console.error(`written to ${options.outPath}`)
  }
  return failuresOf(report).length > 0 ? 1 : 0
}

if (import.meta.main) {
  const options = parseOptions(Bun.argv.slice(2))
  const workDir = mkdtempSync(join(tmpdir(), 'nilegate-bench-memory-'))
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
