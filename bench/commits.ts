// Two commits of the gateway side by side on one host: the base commit runs from a git worktree of
// it (its dependencies installed there), the other from this checkout as it stands, local changes
// included. Rounds are taken in turns, so whatever else loads the machine weighs on both alike; the
// table gives each round, and the medians of req/s, of the main thread's CPU per request (the
// thread that runs out first), of a local Redis's and Postgres's CPU per request when the gateways
// use them, and of the p99, with each round's errors; then this checkout's figures over the base's
// round by round (`--base HEAD` without changes: what is noise on the host). Prints the table;
// writes it only with --out.
//
//   bun bench/commits.ts [--base HEAD~1] [--model upstream|simulator] [--stream] [--rounds 5] [--duration 5]
//                        [--keys 1000] [--connections 50] [--postgres [URL]] [--redis [URL]] [--out FILE]

import { join } from 'node:path'
import { argValue, integerArg } from './arg-value'
import { repoDir, runComparison } from './compare'
import { requestsPerSecond, totalErrors } from './load-result'
import { pairedRatios } from './paired-ratios'
import { percentile } from './percentile'
import type { ScenarioOutcome } from './report'
import { chatBody } from './run'
import { streamedChatBody } from './ttfb'

const models = { upstream: 'bench/upstream-echo', simulator: 'bench/simulated' } as const

async function git(args: string[], cwd = repoDir): Promise<string> {
  const child = Bun.spawn(['git', ...args], { cwd, stdout: 'pipe', stderr: 'pipe' })
  const [output, errors, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${errors.trim()}`)
  return output.trim()
}

/** Each round's figure, and the median of them, as "median (round, round, ...)". */
function rounds(outcomes: ScenarioOutcome[], figure: (outcome: ScenarioOutcome) => number | null, digits: number): string {
  const values = outcomes.map(figure).filter((value): value is number => value !== null)
  if (values.length === 0) return '-'
  const median = percentile([...values].sort((a, b) => a - b), 50)
  return `${median.toFixed(digits)} (${values.map((value) => value.toFixed(digits)).join(', ')})`
}

const reqPerS = (outcome: ScenarioOutcome) => (outcome.result ? requestsPerSecond(outcome.result) : null)
const mainUs = (outcome: ScenarioOutcome) => outcome.cpuUsPerRequest?.main ?? null
const gatewayUs = (outcome: ScenarioOutcome) => (outcome.cpuUsPerRequest ? Object.values(outcome.cpuUsPerRequest).reduce((sum, us) => sum + us, 0) : null)
const p99Ms = (outcome: ScenarioOutcome) => (outcome.result ? outcome.result.latency_us.p99 / 1000 : null)
const errors = (outcome: ScenarioOutcome) => (outcome.result ? totalErrors(outcome.result) : null)
const serverUs = (server: string) => (outcome: ScenarioOutcome) => outcome.serverUsPerRequest?.[server] ?? null

/**
 * This checkout's figure over the base's, round by round, and the median of those ratios: the two
 * of a round ran a few seconds apart, so their ratio leaves out the host's drift between rounds,
 * and its spread shows what two runs of a round differ by. Run with `--base HEAD` and no change,
 * it tells what is noise on the host.
 */
function overBase(pairs: ReadonlyArray<readonly [ScenarioOutcome, ScenarioOutcome]>, figure: (outcome: ScenarioOutcome) => number | null): string {
  return pairedRatios(pairs.map(([base, head]) => [figure(base), figure(head)] as const))
}

await runComparison(null, async (context) => {
  const modelName = argValue(context.args, ['--model']) ?? 'upstream'
  if (!(modelName in models)) throw new Error(`--model must be upstream or simulator, got ${modelName}`)
  const model = models[modelName as keyof typeof models]
  const keys = integerArg(context.args, 'keys', 1_000)
  const base = await git(['rev-parse', '--short', argValue(context.args, ['--base']) ?? 'HEAD~1'])
  const head = await git(['rev-parse', '--short', 'HEAD'])
  const changed = (await git(['status', '--porcelain', '--untracked-files=no'])) !== ''
  const headLabel = `this checkout (${head}${changed ? ' with local changes' : ''})`

  const baseDir = join(context.workDir, 'base-checkout')
  await git(['worktree', 'add', '--detach', baseDir, base])
  // Removed once the gateways have stopped: the base one runs from it until then.
  context.afterStop(async () => {
    await git(['worktree', 'remove', '--force', baseDir])
  })
  console.error(`installing the dependencies of ${base} ...`)
  const install = Bun.spawn(['bun', 'install', '--frozen-lockfile'], { cwd: baseDir, stdout: 'ignore', stderr: 'pipe' })
  if ((await install.exited) !== 0) throw new Error(`bun install in the worktree of ${base}: ${await new Response(install.stderr).text()}`)
  const baseGateway = await context.launchGateway('base', keys, baseDir)
  const headGateway = await context.launchGateway('head', keys)
  const bodyFile = join(context.workDir, 'body.json')
  // --stream: the same chat streamed (19 events), its CPU per request then per stream.
  const streamed = context.args.includes('--stream')
  await Bun.write(bodyFile, streamed ? streamedChatBody(model) : chatBody(model))

  const [baseRounds, headRounds] = await context.measureRoundsInTurns([
    { gateway: baseGateway, bodyFile, keysFile: baseGateway.keysFile, label: base },
    { gateway: headGateway, bodyFile, keysFile: headGateway.keysFile, label: headLabel },
  ])
  const pairs = baseRounds!.map((baseRound, index) => [baseRound, headRounds![index]!] as const)
  const fasterRounds = pairs.filter(([b, h]) => (reqPerS(h) ?? 0) > (reqPerS(b) ?? 0)).length
  const leanerRounds = pairs.filter(([b, h]) => (mainUs(h) ?? Infinity) < (mainUs(b) ?? -Infinity)).length
  const { options } = context
  // The local Redis and Postgres the gateways used, each the CPU it spent a request.
  const servers = Object.keys(baseRounds![0]?.serverUsPerRequest ?? {})
  const markdown = [
    `# ${headLabel} against ${base}`,
    '',
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`bun bench/commits.ts${context.args.length ? ` ${context.args.join(' ')}` : ''}\`: model \`${model}\`${streamed ? ' streamed' : ''}, ${keys} API keys per gateway, gateways on ${options.postgresUrl ? 'Postgres' : 'the embedded PGlite'}${options.redisUrl ? ' with admission in Redis' : ''}; ${context.tool.description}, ${options.connections} connections, ${options.durationS} s per round after a warm-up, the two in turns. CPU from /proc.`,
    '',
    `| gateway | req/s, median (rounds) | main thread us a request | gateway CPU us a request |${servers.map((server) => ` ${server} CPU us a request |`).join('')} p99 ms | errors (rounds) |`,
    `|---|---|---|---|${servers.map(() => '---|').join('')}---|---|`,
    ...([
      [base, baseRounds!],
      [headLabel, headRounds!],
    ] as const).map(([label, outcomes]) => `| ${label} | ${rounds(outcomes, reqPerS, 0)} | ${rounds(outcomes, mainUs, 1)} | ${rounds(outcomes, gatewayUs, 1)} |${servers.map((server) => ` ${rounds(outcomes, serverUs(server), 1)} |`).join('')} ${rounds(outcomes, p99Ms, 1)} | ${outcomes.map((outcome) => errors(outcome) ?? '-').join(', ')} |`),
    '',
    `Round by round, this checkout served more in ${fasterRounds} of ${pairs.length} and spent less of its main thread a request in ${leanerRounds} of ${pairs.length}.`,
    '',
    `This checkout over the base, each round's ratio and their median: req/s ${overBase(pairs, reqPerS)}; main thread CPU a request ${overBase(pairs, mainUs)}; gateway CPU a request ${overBase(pairs, gatewayUs)}${servers.map((server) => `; ${server} CPU a request ${overBase(pairs, serverUs(server))}`).join('')}.`,
    ...(pairs.flat().some((outcome) => (errors(outcome) ?? 0) > 0)
      ? ['', "Rounds with errors (socket errors, timeouts, answers >= 400 such as the edge's 429 when too few keys share the load) count refusals in their req/s."]
      : []),
  ].join('\n')
  return { markdown, outcomes: [...baseRounds!, ...headRounds!] }
})
