// Does the number of API keys in the database change inference throughput? One run, three scenarios on
// the simulator model, through a gateway: (1) 1,000 keys in its database, load over them; on a second
// gateway whose database holds 10,000 keys (9,000 created through the management API), (2) load over
// 1,000 of them and (3) over all 10,000 (each must be warm in the key cache). Writes bench/RESULTS-keys.md.
//
//   bun bench/keys.ts [--keys 10000] [--duration 10] [--rounds 3] [--connections 50] [--postgres [URL]] [--no-write]

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createScratchDatabase, startGateway } from './gateway-process'
import { chooseLoadTool } from './load-tool'
import { requestsPerSecond, totalErrors } from './load-result'
import { readMachineInfo } from './machine-info'
import { ProcessGroup, machineBusyPercent } from './process-group'
import { chatBody, measureScenario, medianRound, type Options, type Scenario } from './run'
import { startUpstream } from './upstream-process'

const repoDir = resolve(import.meta.dir, '..')
const baselineKeys = 1_000

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
    redisUrl: null,
    keepTemp: false,
  }
  const tool = await chooseLoadTool(null)
  const busyBefore = await machineBusyPercent(1_000)
  const upstream = await startUpstream(processes, workDir)
  // Two gateways side by side, one holding the baseline keys and one holding all of them, measured in
  // turns (1 2 3 1 2 3 ...), so whatever else runs on the machine weighs on every scenario alike.
  const launchGateway = async (name: string) => {
    const gatewayDir = join(workDir, name)
    mkdirSync(gatewayDir)
    let databaseUrl: string | null = null
    if (postgresUrl) {
      const scratch = await createScratchDatabase(postgresUrl)
      afterStop.push(() => scratch.drop())
      databaseUrl = scratch.url
    }
    return startGateway({ processes, workDir: gatewayDir, repoDir, upstreamBaseUrl: upstream.baseUrl, keys: baselineKeys, profileDir: null, databaseUrl })
  }
  const few = await launchGateway('few')
  const many = await launchGateway('many')
  console.error(`creating ${totalKeys - baselineKeys} more keys through the management API ...`)
  const startedAt = performance.now()
  const created = await many.createKeys(totalKeys - baselineKeys)
  const creationS = (performance.now() - startedAt) / 1000
  const allKeysFile = join(workDir, 'all-keys.txt')
  await Bun.write(allKeysFile, [...many.keys, ...created].join('\n') + '\n')
  const bodyFile = join(workDir, 'body.json')
  await Bun.write(bodyFile, chatBody('bench/simulated'))

  const scenarios = [
    { gateway: few, keysFile: few.keysFile, label: `${baselineKeys} keys in the database, load over them` },
    { gateway: many, keysFile: many.keysFile, label: `${totalKeys} keys in the database, load over ${baselineKeys} of them` },
    { gateway: many, keysFile: allKeysFile, label: `${totalKeys} keys in the database, load over all ${totalKeys}` },
  ]
  const rounds = scenarios.map(() => [] as Awaited<ReturnType<typeof measureScenario>>[])
  for (let round = 1; round <= options.rounds; round++) {
    for (const [index, item] of scenarios.entries()) {
      console.error(`measuring ${item.label}, round ${round} of ${options.rounds} ...`)
      const scenario: Scenario = { id: String(index + 1) as Scenario['id'], label: item.label, url: `${item.gateway.baseUrl}/chat/completions`, bodyFile, keysFile: item.keysFile, firstKey: item.gateway.keys[0]! }
      rounds[index]!.push(await measureScenario(scenario, { tool, options, processes, workDir, pids: { gateway: item.gateway.pid, upstream: upstream.pid }, isWarm: false }))
    }
  }
  const outcomes = rounds.map(medianRound)
  const baselineRps = outcomes[0]!.result ? requestsPerSecond(outcomes[0]!.result) : 0
  const machine = readMachineInfo(repoDir)
  const lines = [
    '# API keys in the database versus throughput',
    '',
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`bun bench/keys.ts${args.length ? ` ${args.join(' ')}` : ''}\` on ${machine.cpuModel} (${machine.cores} cores, ${machine.memoryGiB} GiB), bun ${machine.bunVersion}, commit ${machine.commit}.`,
    `Two gateways on ${postgresUrl ? 'Postgres' : 'the embedded PGlite'}, measured in turns; model \`bench/simulated\` (16 output tokens), ${tool.description}, ${options.connections} connections, ${options.durationS} s per round, median of ${options.rounds} rounds.`,
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
