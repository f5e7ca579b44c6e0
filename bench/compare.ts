// Side-by-side comparisons in one run (bench/keys.ts, bench/routing.ts): scenarios measured in turns
// (1 2 3 1 2 3 ...) so that whatever else runs on the machine weighs on each alike, and a table of
// each scenario's median round against the first.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { argValue, integerArg, postgresArg, redisArg } from './arg-value'
import { createScratchDatabase, startGateway, type RunningGateway } from './gateway-process'
import { chooseLoadTool, type LoadTool } from './load-tool'
import { requestsPerSecond, totalErrors } from './load-result'
import { readMachineInfo } from './machine-info'
import { machineBusyPercent, ProcessGroup } from './process-group'
import { flushRedis, localServers, measureScenario, medianRound, type Options, type Scenario } from './run'
import { startUpstream, type RunningUpstream } from './upstream-process'
import type { ScenarioOutcome } from './report'

export const repoDir = resolve(import.meta.dir, '..')

/** One scenario: a gateway, the body it gets, and the keys the load rotates over. */
export interface ComparedScenario {
  label: string
  gateway: RunningGateway
  bodyFile: string
  keysFile: string
}

/** What a comparison script is handed: the shared options, the load tool, a fake upstream, and a way to start gateways. */
export interface ComparisonContext {
  args: string[]
  options: Options
  tool: LoadTool
  upstream: RunningUpstream
  workDir: string
  processes: ProcessGroup
  /** A gateway on the bench catalog with `keys` API keys, in a directory of its own, run from `fromRepoDir` (this checkout by default). */
  launchGateway(name: string, keys: number, fromRepoDir?: string): Promise<RunningGateway>
  /** Measures the scenarios in turns; the median round of each. */
  measureInTurns(scenarios: ComparedScenario[]): Promise<ScenarioOutcome[]>
  /** Measures the scenarios in turns; every round of each. */
  measureRoundsInTurns(scenarios: ComparedScenario[]): Promise<ScenarioOutcome[][]>
  /** Runs `task` once every process of the comparison has stopped. */
  afterStop(task: () => Promise<void>): void
}

/** Markdown: a title, how it was measured, notes, and the table of scenarios against the first. */
export function comparisonReport(context: ComparisonContext, title: string, command: string, notes: string[], outcomes: ScenarioOutcome[]): string {
  const { options, tool } = context
  const machine = readMachineInfo(repoDir)
  const baseline = outcomes[0]?.result ? requestsPerSecond(outcomes[0].result) : 0
  return [
    `# ${title}`,
    '',
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` on ${machine.cpuModel} (${machine.cores} cores, ${machine.memoryGiB} GiB), bun ${machine.bunVersion}, commit ${machine.commit}.`,
    `Gateways on ${options.postgresUrl ? 'Postgres' : 'the embedded PGlite'}; ${tool.description}, ${options.connections} connections, ${options.durationS} s per round, scenarios in turns, median of ${options.rounds} rounds.`,
    ...notes,
    '',
    '| scenario | req/s (rounds) | vs. scenario 1 | p50 ms | p99 ms | errors |',
    '|---|---|---|---|---|---|',
    ...outcomes.map((outcome) => {
      if (!outcome.result) return `| ${outcome.label} | ${outcome.notMeasured ?? 'not measured'} | | | | |`
      const rps = requestsPerSecond(outcome.result)
      const rounds = outcome.roundsRps?.map((value) => value.toFixed(0)).join(', ') ?? rps.toFixed(0)
      const share = baseline ? `${((rps / baseline) * 100).toFixed(0)}%` : ''
      return `| ${outcome.label} | ${rps.toFixed(0)} (${rounds}) | ${share} | ${(outcome.result.latency_us.p50 / 1000).toFixed(1)} | ${(outcome.result.latency_us.p99 / 1000).toFixed(1)} | ${totalErrors(outcome.result)} |`
    }),
  ].join('\n')
}

/**
 * Runs a comparison script: parses `--duration --rounds --connections --postgres --redis --no-write
 * --out`, starts the fake upstream, hands `run` its context, prints and writes the markdown it
 * returns (to `--out`, else to `defaultOut` in bench/ unless that is null), and cleans up. Exits
 * non-zero when a scenario failed or had errors.
 */
export async function runComparison(
  defaultOut: string | null,
  run: (context: ComparisonContext) => Promise<{ markdown: string; outcomes: ScenarioOutcome[] }>,
): Promise<never> {
  const args = Bun.argv.slice(2)
  const workDir = mkdtempSync(join(tmpdir(), 'nilegate-bench-'))
  const processes = new ProcessGroup()
  const afterStop: (() => Promise<void>)[] = []
  process.on('exit', () => processes.killAllNow())
  let exitCode = 1
  try {
    const out = argValue(args, ['--out']) ?? (defaultOut === null ? null : join(repoDir, 'bench', defaultOut))
    const options: Options = {
      durationS: integerArg(args, 'duration', 10),
      rounds: integerArg(args, 'rounds', 3),
      connections: integerArg(args, 'connections', 50),
      threads: 1,
      tool: null,
      keys: 0,
      ttfbRequests: 0,
      ttfbWarmup: 0,
      outPath: args.includes('--no-write') || out === null ? null : resolve(out),
      profileDir: null,
      postgresUrl: postgresArg(args),
      redisUrl: redisArg(args),
      keepTemp: false,
      metricsRps: 0,
    }
    const tool = await chooseLoadTool(null)
    if (options.redisUrl) await flushRedis(options.redisUrl)
    const busyBefore = await machineBusyPercent(1_000)
    const upstream = await startUpstream(processes, workDir)
    const context: ComparisonContext = {
      args,
      options,
      tool,
      upstream,
      workDir,
      processes,
      async launchGateway(name, keys, fromRepoDir = repoDir) {
        const gatewayDir = join(workDir, name)
        mkdirSync(gatewayDir)
        let databaseUrl: string | null = null
        if (options.postgresUrl) {
          const scratch = await createScratchDatabase(options.postgresUrl)
          afterStop.push(() => scratch.drop())
          databaseUrl = scratch.url
        }
        return startGateway({ processes, workDir: gatewayDir, repoDir: fromRepoDir, upstreamBaseUrl: upstream.baseUrl, keys, profileDir: null, databaseUrl, redisUrl: options.redisUrl })
      },
      async measureInTurns(scenarios) {
        return (await this.measureRoundsInTurns(scenarios)).map(medianRound)
      },
      async measureRoundsInTurns(scenarios) {
        const rounds = scenarios.map(() => [] as ScenarioOutcome[])
        const servers = localServers(options)
        for (let round = 1; round <= options.rounds; round++) {
          for (const [index, item] of scenarios.entries()) {
            console.error(`measuring ${item.label}, round ${round} of ${options.rounds} ...`)
            const scenario: Scenario = { id: String(index + 1) as Scenario['id'], label: item.label, url: `${item.gateway.baseUrl}/chat/completions`, bodyFile: item.bodyFile, keysFile: item.keysFile, firstKey: item.gateway.keys[0]! }
            const pids = { gateway: item.gateway.pid, upstream: upstream.pid, servers }
            rounds[index]!.push(await measureScenario(scenario, { tool, options, processes, workDir, pids, isWarm: false }))
          }
        }
        return rounds
      },
      afterStop(task) {
        afterStop.push(task)
      },
    }
    const { markdown, outcomes } = await run(context)
    const busyNote = busyBefore !== null && busyBefore > 10 ? `\nOther work kept the CPUs ${busyBefore.toFixed(0)}% busy in the second before the run.` : ''
    console.log(markdown + busyNote)
    if (options.outPath) await Bun.write(options.outPath, markdown + busyNote + '\n')
    exitCode = outcomes.some((outcome) => !outcome.result || totalErrors(outcome.result) > 0) ? 1 : 0
  } catch (error) {
    console.error(`bench failed: ${(error as Error).stack ?? error}`)
  } finally {
    await processes.stopAll()
    for (const task of afterStop) await task().catch((error) => console.error(`cleanup: ${(error as Error).message}`))
    rmSync(workDir, { recursive: true, force: true })
  }
  process.exit(exitCode)
}
