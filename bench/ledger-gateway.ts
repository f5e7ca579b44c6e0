// The processes bench/ledger.ts measures through: the gateway started again on the same database
// and tenant (startGateway makes a new demo tenant each time), a scratch Redis for `reconcile`,
// and the CLI.

import { join } from 'node:path'
import { describeExit, waitForLogLine, type ProcessGroup } from './process-group'

export interface LedgerGateway {
  /** Ends in /v1. */
  baseUrl: string
  /** From spawning to the first HTTP answer, in ms. */
  startMs: number
  stop(): Promise<void>
}

export interface LedgerGatewayLaunch {
  processes: ProcessGroup
  repoDir: string
  workDir: string
  databaseUrl: string
  /** The catalog file startGateway wrote. */
  catalogPath: string
}

function freePort(): number {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

/** This process's environment without what chooses databases, addresses and metrics, plus `env`. */
export function benchEnv(env: Record<string, string>): Record<string, string> {
  const { DATABASE_URL: _database, REDIS_URL: _redis, METRICS: _metrics, METRICS_TOKEN: _metricsToken, DATA_DIR: _dataDir, HOST: _host, PORT: _port, ...inherited } = Bun.env
  return { ...(inherited as Record<string, string>), ...env }
}

let starts = 0

/** Starts `bun server/main.ts` on the database as startGateway does (its DATA_DIR and catalog), and waits until it answers. */
export async function startLedgerGateway(launch: LedgerGatewayLaunch): Promise<LedgerGateway> {
  const port = freePort()
  const env = benchEnv({
    DATABASE_URL: launch.databaseUrl,
    BUN_CONFIG_MAX_HTTP_REQUESTS: Bun.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? '8192',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: join(launch.workDir, 'data'),
    NILEGATE_CONFIG: launch.catalogPath,
  })
  const logPath = join(launch.workDir, `gateway-${++starts}.log`)
  const startedAt = performance.now()
  const child = launch.processes.spawn(['bun', 'server/main.ts'], { env, cwd: launch.repoDir, logPath })
  const baseUrl = `http://127.0.0.1:${port}/v1`
  const deadline = startedAt + 120_000
  for (;;) {
    const exited = await describeExit('the gateway', child, logPath)
    if (exited) throw new Error(`${exited} while starting`)
    if (performance.now() > deadline) throw new Error(`the gateway did not answer on ${baseUrl} within 120 s (log: ${logPath})`)
    // Any answer, 401 included, means it serves HTTP.
    const answered = await fetch(`${baseUrl}/models`, { signal: AbortSignal.timeout(1_000) }).then(() => true, () => false)
    if (answered) break
    await Bun.sleep(50)
  }
  const startMs = performance.now() - startedAt
  return {
    baseUrl,
    startMs,
    async stop() {
      child.kill('SIGTERM')
      const exited = await Promise.race([child.exited.then(() => true), Bun.sleep(10_000).then(() => false)])
      if (!exited) child.kill('SIGKILL')
      await child.exited
    },
  }
}

/** A redis-server on a free port that keeps nothing on disk, or null when it is not installed. */
export async function startRedis(processes: ProcessGroup, workDir: string): Promise<{ url: string; stop(): Promise<void> } | null> {
  if (!Bun.which('redis-server')) return null
  const port = freePort()
  const logPath = join(workDir, `redis-${port}.log`)
  const child = processes.spawn(['redis-server', '--port', String(port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1'], { logPath, cwd: workDir })
  await waitForLogLine(logPath, /Ready to accept connections/, child, 10_000)
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}

/** Runs `bun server/cli.ts <args>` to its end; its output, exit code and wall time in ms. */
export async function runCli(launch: Pick<LedgerGatewayLaunch, 'processes' | 'repoDir' | 'workDir'>, args: string[], env: Record<string, string>): Promise<{ code: number; output: string; wallMs: number }> {
  const logPath = join(launch.workDir, `cli-${args.join('-').replace(/[^\w-]/g, '')}-${++starts}.log`)
  const startedAt = performance.now()
  const child = launch.processes.spawn(['bun', 'server/cli.ts', ...args], { env: benchEnv(env), cwd: launch.repoDir, logPath })
  const code = await child.exited
  return { code, output: await Bun.file(logPath).text(), wallMs: performance.now() - startedAt }
}
