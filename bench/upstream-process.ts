import { join } from 'node:path'
import { describeExit, ProcessGroup, waitForLogLine } from './process-group'

export interface RunningUpstream {
  /** Ends in /v1, as OpenAI-compatible base URLs do. */
  baseUrl: string
  pid: number
  /** Why the upstream is no longer running, or null while it runs. */
  exitReport(): Promise<string | null>
}

/** Starts bench/fake-upstream.ts in its own process on a free port (no delays). */
export async function startUpstream(processes: ProcessGroup, workDir: string): Promise<RunningUpstream> {
  const logPath = join(workDir, 'fake-upstream.log')
  const child = processes.spawn(['bun', join(import.meta.dir, 'fake-upstream.ts'), '--port', '0', '--ttft-ms', '0', '--chunk-delay-ms', '0'], {
    env: { ...Bun.env } as Record<string, string>,
    logPath,
  })
  const [, baseUrl] = await waitForLogLine(logPath, /listening on (http:\/\/\S+\/v1)/, child, 15_000)
  return { baseUrl: baseUrl!, pid: child.pid, exitReport: () => describeExit('the fake upstream', child, logPath) }
}

/** Starts bench/bare-proxy.ts in front of `upstreamBaseUrl`, on a free port, with its `--client`. */
export async function startBareProxy(processes: ProcessGroup, workDir: string, upstreamBaseUrl: string, client: 'fetch' | 'socket' = 'fetch', framework: 'bun' | 'elysia' = 'bun'): Promise<RunningUpstream> {
  const name = `${framework}-${client}`
  const logPath = join(workDir, `bare-proxy-${name}.log`)
  const child = processes.spawn(['bun', join(import.meta.dir, 'bare-proxy.ts'), '--upstream', upstreamBaseUrl, '--client', client, '--framework', framework], { env: { ...Bun.env } as Record<string, string>, logPath })
  const [, baseUrl] = await waitForLogLine(logPath, /listening on (http:\/\/\S+\/v1)/, child, 15_000)
  return { baseUrl: baseUrl!, pid: child.pid, exitReport: () => describeExit(`the bare proxy (${name})`, child, logPath) }
}
