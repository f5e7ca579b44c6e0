import { join } from 'node:path'
import { loadResultOf, parseLoadResult, type LoadResult } from './load-result'
import type { ProcessGroup } from './process-group'

export type LoadToolName = 'wrk' | 'bun'

export interface LoadTool {
  name: LoadToolName
  /** As printed in results, with its version. */
  description: string
}

/** wrk when it is on PATH (or asked for), else the Bun generator in bench/load.ts. */
export async function chooseLoadTool(requested: LoadToolName | null): Promise<LoadTool> {
  const wrkPath = Bun.which('wrk')
  if (requested === 'wrk' && !wrkPath) throw new Error('--tool wrk: wrk is not on PATH (Debian: apt-get install -y wrk)')
  if (requested !== 'bun' && wrkPath) {
    // `wrk -v` prints its version and usage, and exits non-zero.
    const version = Bun.spawnSync([wrkPath, '-v']).stdout.toString().split('\n')[0]?.split(' [')[0]?.trim()
    return { name: 'wrk', description: version || 'wrk' }
  }
  return { name: 'bun', description: `Bun load tester (bench/load.ts) on bun ${Bun.version}` }
}

export interface LoadRun {
  url: string
  bodyFile: string
  /** File of API keys, one a line, or null to send no Authorization. */
  keysFile: string | null
  connections: number
  /** wrk threads; the Bun generator has one. */
  threads: number
  durationS: number
  /** Where the tool's output is kept. */
  logPath: string
}

const benchDir = import.meta.dir

/** Runs one closed-loop load (2 s timeout a request) and returns what the tool measured. */
export async function runLoadTool(tool: LoadTool, run: LoadRun, processes: ProcessGroup): Promise<LoadResult> {
  const jsonPath = `${run.logPath}.json`
  const cmd =
    tool.name === 'wrk'
      ? ['wrk', '-t', String(Math.min(run.threads, run.connections)), '-c', String(run.connections), '-d', `${run.durationS}s`,
         '--timeout', '2s', '-s', join(benchDir, 'post.lua'), run.url]
      : ['bun', join(benchDir, 'load.ts'), '--url', run.url, '--body-file', run.bodyFile, '--concurrency', String(run.connections),
         '--duration', String(run.durationS), '--timeout', '2', '--json', jsonPath, ...(run.keysFile ? ['--keys', run.keysFile] : [])]
  const env = { ...Bun.env, BENCH_BODY_FILE: run.bodyFile, BENCH_KEYS_FILE: run.keysFile ?? '' }
  const child = processes.spawn(cmd, { env, logPath: run.logPath })
  const exitCode = await child.exited
  const output = await Bun.file(run.logPath).text()
  if (exitCode !== 0) throw new Error(`${cmd[0]} exited with ${exitCode}:\n${output.slice(-2000)}`)
  const cpuTime = child.resourceUsage()?.cpuTime
  const result = tool.name === 'wrk' ? parseLoadResult(output) : loadResultOf(await Bun.file(jsonPath).json())
  return { ...result, ...(cpuTime ? { tool_cpu_us: Number(cpuTime.total) } : {}) }
}
