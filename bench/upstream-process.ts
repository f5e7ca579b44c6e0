import { join } from 'node:path'
import { describeExit, ProcessGroup, waitForLogLine } from './process-group'

export interface RunningUpstream {
  /** Ends in /v1, as OpenAI-compatible base URLs do. */
  baseUrl: string
  pid: number
  /** Why the upstream is no longer running, or null while it runs. */
  exitReport(): Promise<string | null>
}

/** How slowly the fake upstream answers: its `--ttft-ms` and `--chunk-delay-ms`. */
export interface UpstreamPace {
  ttftMs: number
  chunkDelayMs: number
}

/** Starts bench/fake-upstream.ts in its own process on a free port (no delays unless `pace` says). */
export async function startUpstream(processes: ProcessGroup, workDir: string, pace: UpstreamPace = { ttftMs: 0, chunkDelayMs: 0 }): Promise<RunningUpstream> {
  const isPaced = pace.ttftMs > 0 || pace.chunkDelayMs > 0
  const name = isPaced ? `fake-upstream-ttft-${pace.ttftMs}-chunk-${pace.chunkDelayMs}` : 'fake-upstream'
  const logPath = join(workDir, `${name}.log`)
  const child = processes.spawn(['bun', join(import.meta.dir, 'fake-upstream.ts'), '--port', '0', '--ttft-ms', String(pace.ttftMs), '--chunk-delay-ms', String(pace.chunkDelayMs)], {
    env: { ...Bun.env } as Record<string, string>,
    logPath,
  })
  const [, baseUrl] = await waitForLogLine(logPath, /listening on (http:\/\/\S+\/v1)/, child, 15_000)
  const description = isPaced ? `the fake upstream (${pace.ttftMs} ms to the first chunk, ${pace.chunkDelayMs} ms between chunks)` : 'the fake upstream'
  return { baseUrl: baseUrl!, pid: child.pid, exitReport: () => describeExit(description, child, logPath) }
}

/** Starts bench/bare-proxy.ts in front of `upstreamBaseUrl`, on a free port, with its `--client`. */
export async function startBareProxy(processes: ProcessGroup, workDir: string, upstreamBaseUrl: string, client: 'fetch' | 'socket' = 'fetch', framework: 'bun' | 'elysia' = 'bun', events: 'pass' | 'relay' = 'pass'): Promise<RunningUpstream> {
  const name = `${framework}-${client}${events === 'relay' ? '-relay' : ''}`
  const logPath = join(workDir, `bare-proxy-${name}.log`)
  const child = processes.spawn(['bun', join(import.meta.dir, 'bare-proxy.ts'), '--upstream', upstreamBaseUrl, '--client', client, '--framework', framework, '--events', events], { env: { ...Bun.env } as Record<string, string>, logPath })
  const [, baseUrl] = await waitForLogLine(logPath, /listening on (http:\/\/\S+\/v1)/, child, 15_000)
  return { baseUrl: baseUrl!, pid: child.pid, exitReport: () => describeExit(`the bare proxy (${name})`, child, logPath) }
}
