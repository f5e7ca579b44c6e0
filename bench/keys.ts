// Does the number of API keys in the database change inference throughput? One run, three scenarios on
// the simulator model, through the gateway: (1) 160 keys in the database, load over them; then 9,840
// more keys are created through the management API, and (2) the same 160 keys carry the load, (3) the
// load rotates over all 10,000 keys (each must be warm in the gateway's key cache). Writes bench/RESULTS-keys.md.
//
//   bun bench/keys.ts [--keys 10000] [--duration 10] [--rounds 3] [--connections 50] [--postgres [URL]] [--no-write]

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createScratchDatabase, startGateway, type RunningGateway } from './gateway-process'
import { chooseLoadTool } from './load-tool'
import { requestsPerSecond, totalErrors } from './load-result'
import { readMachineInfo } from './machine-info'
import { ProcessGroup, machineBusyPercent } from './process-group'
import { chatBody, measureScenario, medianRound, type Options, type Scenario } from './run'
import { startUpstream } from './upstream-process'

const repoDir = resolve(import.meta.dir, '..')
const baselineKeys = 160

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(`--${name}`)
  return index >= 0 ? args[index + 1] : undefined
}

function integerOption(args: string[], name: string, fallback: number): number {
  const raw = option(args, name)
  const value = raw === undefined ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got ${raw}`)
  return value
}

async function json(response: Response, what: string): Promise<any> {
  const text = await response.text()
  if (!response.ok) throw new Error(`${what}: ${response.status} ${text.slice(0, 500)}`)
  return JSON.parse(text)
}

/** Signs in as the first demo tenant and creates `count` keys in its project, a few requests at a time. */
async function createKeys(gateway: RunningGateway, count: number): Promise<string[]> {
  const tenant = gateway.firstTenant
  const login = await json(
    await fetch(`${gateway.baseUrl}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: tenant.email, password: tenant.password }) }),
    'logging in',
  )
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${login.access_token}` }
  const url = `${gateway.baseUrl}/organization/projects/${tenant.project_id}/api_keys`
  const keys: string[] = []
  let next = 0
  const worker = async () => {
    while (next < count) {
      const index = next++
      const created = await json(await fetch(url, { method: 'POST', headers, body: JSON.stringify({ name: `bench key ${index}` }) }), 'creating a key')
      keys.push(created.value)
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  return keys
}

async function main(args: string[], processes: ProcessGroup, workDir: string, afterStop: (() => Promise<void>)[]): Promise<number> {
  const totalKeys = integerOption(args, 'keys', 10_000)
  const postgresUrl = args.includes('--postgres') ? (option(args, 'postgres')?.startsWith('postgres') ? option(args, 'postgres')! : 'postgres://postgres@127.0.0.1:5432/postgres') : null
  const options: Options = {
    durationS: integerOption(args, 'duration', 10),
    rounds: integerOption(args, 'rounds', 3),
    connections: integerOption(args, 'connections', 50),
    threads: 1,
    tool: null,
    keys: baselineKeys,
    ttfbRequests: 0,
    ttfbWarmup: 0,
    outPath: args.includes('--no-write') ? null : resolve(option(args, 'out') ?? join(repoDir, 'bench', 'RESULTS-keys.md')),
    profileDir: null,
    postgresUrl,
    keepTemp: false,
  }
  const tool = await chooseLoadTool(null)
  const busyBefore = await machineBusyPercent(1_000)
  const upstream = await startUpstream(processes, workDir)
  let databaseUrl: string | null = null
  if (postgresUrl) {
    const scratch = await createScratchDatabase(postgresUrl)
    afterStop.push(() => scratch.drop())
    databaseUrl = scratch.url
  }
  const gateway = await startGateway({ processes, workDir, repoDir, upstreamBaseUrl: upstream.baseUrl, keys: baselineKeys, profileDir: null, databaseUrl })
  const bodyFile = join(workDir, 'body.json')
  await Bun.write(bodyFile, chatBody('bench/simulated'))
  const allKeysFile = join(workDir, 'all-keys.txt')
  const pids = { gateway: gateway.pid, upstream: upstream.pid }
  const scenario = (id: string, label: string, keysFile: string): Scenario => ({ id: id as Scenario['id'], label, url: `${gateway.baseUrl}/chat/completions`, bodyFile, keysFile, firstKey: gateway.keys[0]! })
  const measure = async (scenarios: Scenario[]) => {
    const rounds = scenarios.map(() => [] as Awaited<ReturnType<typeof measureScenario>>[])
    for (let round = 1; round <= options.rounds; round++) {
      for (const [index, item] of scenarios.entries()) {
        console.error(`measuring ${item.label}, round ${round} of ${options.rounds} ...`)
        rounds[index]!.push(await measureScenario(item, { tool, options, processes, workDir, pids, isWarm: false }))
      }
    }
    return rounds.map(medianRound)
  }

  const baseline = await measure([scenario('1', `${baselineKeys} keys in the database, load over them`, gateway.keysFile)])
  console.error(`creating ${totalKeys - baselineKeys} more keys through the management API ...`)
  const startedAt = performance.now()
  const created = await createKeys(gateway, totalKeys - baselineKeys)
  const creationS = (performance.now() - startedAt) / 1000
  await Bun.write(allKeysFile, [...gateway.keys, ...created].join('\n') + '\n')
  const many = await measure([
    scenario('2', `${totalKeys} keys in the database, load over the same ${baselineKeys}`, gateway.keysFile),
    scenario('3', `${totalKeys} keys in the database, load over all ${totalKeys}`, allKeysFile),
  ])

  const outcomes = [...baseline, ...many]
  const baselineRps = baseline[0]!.result ? requestsPerSecond(baseline[0]!.result) : 0
  const machine = readMachineInfo(repoDir)
  const lines = [
    '# API keys in the database versus throughput',
    '',
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`bun bench/keys.ts${args.length ? ` ${args.join(' ')}` : ''}\` on ${machine.cpuModel} (${machine.cores} cores, ${machine.memoryGiB} GiB), bun ${machine.bunVersion}, commit ${machine.commit}.`,
    `Gateway on ${postgresUrl ? 'Postgres' : 'the embedded PGlite'}, model \`bench/simulated\` (16 output tokens), ${tool.description}, ${options.connections} connections, ${options.durationS} s per round, median of ${options.rounds} rounds.`,
    `${totalKeys - baselineKeys} keys were created through \`POST /v1/organization/projects/{id}/api_keys\` in ${creationS.toFixed(1)} s.`,
    ...(busyBefore !== null && busyBefore > 10 ? [`Other work kept the CPUs ${busyBefore.toFixed(0)}% busy in the second before the run.`] : []),
    '',
    '| scenario | req/s (rounds) | vs. scenario 1 | p50 ms | p99 ms | errors |',
    '|---|---|---|---|---|---|',
    ...outcomes.map((outcome) => {
      if (!outcome.result) return `| ${outcome.label} | ${outcome.notMeasured ?? 'not measured'} | | | | |`
      const rps = requestsPerSecond(outcome.result)
      const rounds = outcome.roundsRps?.map((value) => value.toFixed(0)).join(', ') ?? rps.toFixed(0)
      return `| ${outcome.label} | ${rps.toFixed(0)} (${rounds}) | ${baselineRps ? `${((rps / baselineRps) * 100).toFixed(0)}%` : ''} | ${(outcome.result.latency_us.p50 / 1000).toFixed(1)} | ${(outcome.result.latency_us.p99 / 1000).toFixed(1)} | ${totalErrors(outcome.result)} |`
    }),
  ]
  const markdown = lines.join('\n')
  console.log(markdown)
  if (options.outPath) await Bun.write(options.outPath, markdown + '\n')
  return outcomes.some((outcome) => !outcome.result || totalErrors(outcome.result) > 0) ? 1 : 0
}

if (import.meta.main) {
  const workDir = mkdtempSync(join(tmpdir(), 'nilegate-bench-keys-'))
  const processes = new ProcessGroup()
  const afterStop: (() => Promise<void>)[] = []
  let exitCode = 1
  process.on('exit', () => processes.killAllNow())
  try {
    exitCode = await main(Bun.argv.slice(2), processes, workDir, afterStop)
  } catch (error) {
    console.error(`bench failed: ${(error as Error).stack ?? error}`)
  } finally {
    await processes.stopAll()
    for (const task of afterStop) await task().catch((error) => console.error(`cleanup: ${(error as Error).message}`))
    rmSync(workDir, { recursive: true, force: true })
  }
  process.exit(exitCode)
}
