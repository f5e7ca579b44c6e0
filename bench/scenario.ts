// One gateway scenario alone: chat through a gateway to the fake upstream, or to the simulator,
// whole or streamed, for `--duration` seconds after a 3 s warm-up; prints req/s, the p99 and the
// gateway's CPU a request by thread (and a local Redis's and Postgres's with --redis and
// --postgres). With --profile DIR the gateway runs under `bun --cpu-prof`, so that the profile holds
// this scenario alone (`bun bench/profile-summary.ts DIR/*.cpuprofile`), which bench/run.ts's,
// spanning every scenario, does not. `--env NAME=VALUE` (repeatable) sets the gateway's environment,
// e.g. `--env USAGE_FLUSH_MS=2000`, for a quick comparison; bench/commits.ts compares commits.
//
//   bun bench/scenario.ts [--model upstream|simulator] [--stream] [--duration 10] [--connections 50]
//                         [--keys 1000] [--postgres [URL]] [--redis [URL]] [--profile DIR] [--env NAME=VALUE]

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { argValue, integerArg, postgresArg, redisArg } from './arg-value'
import { createScratchDatabase, startGateway } from './gateway-process'
import { chooseLoadTool, runLoadTool } from './load-tool'
import { requestsPerSecond, totalErrors } from './load-result'
import { processesNamed, ProcessGroup, threadCpuSeconds, threadGroups, totalCpuSeconds } from './process-group'
import { chatBody, flushRedis } from './run'
import { streamedChatBody } from './ttfb'
import { startUpstream } from './upstream-process'

const args = Bun.argv.slice(2)
const models = { upstream: 'bench/upstream-echo', simulator: 'bench/simulated' } as const
const modelName = argValue(args, ['--model']) ?? 'upstream'
if (!(modelName in models)) throw new Error(`--model must be upstream or simulator, got ${modelName}`)
const model = models[modelName as keyof typeof models]
const stream = args.includes('--stream')
const durationS = integerArg(args, 'duration', 10)
const connections = integerArg(args, 'connections', 50)
const keyCount = integerArg(args, 'keys', 1_000)
const postgresUrl = postgresArg(args)
const redisUrl = redisArg(args)
const profileDir = argValue(args, ['--profile']) ?? null
const env: Record<string, string> = { METRICS: 'on' }
args.forEach((arg, index) => {
  if (arg !== '--env') return
  const [name, ...value] = (args[index + 1] ?? '').split('=')
  if (!name || value.length === 0) throw new Error(`--env takes NAME=VALUE, got ${args[index + 1]}`)
  env[name] = value.join('=')
})

const workDir = mkdtempSync(join(tmpdir(), 'nilegate-scenario-'))
const processes = new ProcessGroup()
const scratch = postgresUrl ? await createScratchDatabase(postgresUrl) : null
// The counters a run before left are not this run's: the database starts empty and is left so.
if (redisUrl) await flushRedis(redisUrl)
try {
  const upstream = await startUpstream(processes, workDir)
  const gateway = await startGateway({ processes, workDir, repoDir: join(import.meta.dir, '..'), upstreamBaseUrl: upstream.baseUrl, keys: keyCount, profileDir, databaseUrl: scratch?.url ?? null, redisUrl, env })
  const bodyFile = join(workDir, 'body.json')
  await Bun.write(bodyFile, stream ? streamedChatBody(model) : chatBody(model))
  const tool = await chooseLoadTool(null)
  const run = { url: `${gateway.baseUrl}/chat/completions`, bodyFile, keysFile: gateway.keysFile, connections, threads: 1, durationS: 3, logPath: join(workDir, 'warm-up.log') }
  await runLoadTool(tool, run, processes)

  // Redis and Postgres as the machine runs them (one server each); their CPU counts only when used.
  const servers = [...(redisUrl ? ['redis-server'] : []), ...(scratch ? ['postgres'] : [])]
  const serverPids = new Map(await Promise.all(servers.map(async (name) => [name, await processesNamed(name)] as const)))
  const serverCpu = () => Promise.all(servers.map((name) => totalCpuSeconds(serverPids.get(name)!)))
  const [threadsBefore, serversBefore] = [await threadCpuSeconds(gateway.pid), await serverCpu()]
  const result = await runLoadTool(tool, { ...run, durationS, logPath: join(workDir, 'load.log') }, processes)
  const [threadsAfter, serversAfter] = [await threadCpuSeconds(gateway.pid), await serverCpu()]

  if (result.requests === 0) throw new Error(`no request was answered; the load tool said:\n${(await Bun.file(join(workDir, 'load.log')).text()).slice(-2000)}`)
  const perRequestUs = (seconds: number) => ((seconds / result.requests) * 1e6).toFixed(1)
  const what = `${stream ? 'streamed ' : ''}chat to ${modelName === 'upstream' ? 'the fake upstream' : 'the simulator'}`
  console.log(`${what}, ${scratch ? 'Postgres' : 'embedded'}${redisUrl ? ' + Redis' : ''}, ${tool.description}, ${connections} connections, ${durationS} s`)
  console.log(`${Math.round(requestsPerSecond(result))} ${stream ? 'streams' : 'requests'} a second, p99 ${(result.latency_us.p99 / 1000).toFixed(2)} ms, errors ${totalErrors(result)}`)
  if (threadsBefore && threadsAfter) {
    const byThread = threadGroups.map((group) => `${group} ${perRequestUs(threadsAfter[group] - threadsBefore[group])}`)
    const total = threadGroups.reduce((sum, group) => sum + threadsAfter[group] - threadsBefore[group], 0)
    console.log(`gateway CPU us a ${stream ? 'stream' : 'request'}: ${byThread.join(', ')}; total ${perRequestUs(total)}`)
  }
  servers.forEach((name, index) => console.log(`${name} CPU us a ${stream ? 'stream' : 'request'}: ${perRequestUs(serversAfter[index]! - serversBefore[index]!)}`))
  // Ended gracefully, so that a CPU profile is written.
  await gateway.stop()
  if (profileDir) console.log(`CPU profile of the gateway in ${profileDir}: bun bench/profile-summary.ts ${profileDir}/*.cpuprofile`)
} finally {
  await processes.stopAll()
  await scratch?.drop()
  if (redisUrl) await flushRedis(redisUrl)
  rmSync(workDir, { recursive: true, force: true })
}
