import { afterAll, beforeAll } from 'bun:test'
import type { Subprocess } from 'bun'
import { createMigratedPgliteDir, createPostgresDatabase, createTempDir } from './databases'

const repoDir = new URL('../..', import.meta.url).pathname
const listeningLine = /nilegate listening on (http:\/\/\S+\/v1)\b/
// Variables of the calling shell that would point the gateway elsewhere than this test wants, or
// set what `bun start` sets.
const overriddenEnv = ['DATABASE_URL', 'REDIS_URL', 'NILEGATE_CONFIG', 'DATA_DIR', 'HOST', 'PORT', 'PUBLIC_BASE_URL', 'BUN_CONFIG_MAX_HTTP_REQUESTS']
const running = new Set<Subprocess>()

// A test runner that dies mid-file must not leave gateways behind; each is killed by its own pid.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/** Where a test gateway keeps its governance data. */
export type GatewayDatabase = 'pglite' | 'postgres'

export interface GatewayOptions {
  /** `pglite`: a temp DATA_DIR (embedded); `postgres`: a freshly created, uniquely named database. */
  database: GatewayDatabase
  /** A catalog file for NILEGATE_CONFIG; the demo catalog when absent. */
  catalogPath?: string
  /** An existing Postgres database to share with other gateways (not dropped by `stop()`). */
  sharedDatabaseUrl?: string
  /** More environment for the gateway and the CLI (e.g. USAGE_FLUSH_MS). */
  env?: Record<string, string>
  startTimeoutMs?: number
  /** Embedded: start on an empty DATA_DIR, as a first start does, instead of a migrated PGlite. */
  emptyDataDir?: boolean
  /** Start with `bun run start`, as README says, rather than `bun server/main.ts` (`pid` is then the script runner's). */
  viaStartScript?: boolean
}

/** What `bun server/cli.ts demo` is asked for. */
export interface DemoKeyOptions {
  balanceEgp?: number | string
  rpm?: number
}

export interface RunningGateway {
  readonly database: GatewayDatabase
  /** As the gateway printed it; ends in /v1. */
  readonly baseUrl: string
  /** `http://127.0.0.1:PORT`. */
  readonly origin: string
  readonly hostname: string
  readonly port: number
  /** The gateway's own Postgres database, or null when embedded. */
  readonly databaseUrl: string | null
  readonly pid: number
  /** Whether the process is still running. */
  readonly isRunning: boolean
  /** Everything the gateway printed so far, for failure messages. */
  output(): string
  /** A fresh API key of a new demo tenant, from `bun server/cli.ts demo --json`. */
  createApiKey(options?: DemoKeyOptions): Promise<string>
  /** A new demo tenant with its owner's e-mail and password, from `bun server/cli.ts demo --json`. */
  createDemoTenant(options?: DemoKeyOptions): Promise<DemoTenantJson>
  /** The first match of `pattern` in what the gateway printed, waiting for it up to `timeoutMs`. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  /** SIGTERM, then SIGKILL after `graceMs`; then drops the database and removes the data dir. */
  stop(graceMs?: number): Promise<void>
}

/** Collects a child's output as text and lets callers wait for a line without polling. */
class OutputLog {
  private text = ''
  private readonly listeners = new Set<() => void>()

  constructor(streams: ReadableStream<Uint8Array>[]) {
    for (const stream of streams) void this.pump(stream)
  }

  get all(): string {
    return this.text
  }

  private async pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder()
    const reader = stream.getReader()
    try {
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        this.text += decoder.decode(read.value, { stream: true })
        for (const listener of this.listeners) listener()
      }
    } catch {
      // The child went away; what it printed is kept.
    }
  }

  /** Resolves with the first match of `pattern`; rejects when `child` exits first or `timeoutMs` passes. */
  waitFor(pattern: RegExp, child: Subprocess, timeoutMs: number): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const finish = (settle: () => void) => {
        this.listeners.delete(check)
        clearTimeout(timer)
        settle()
      }
      const check = () => {
        const match = this.text.match(pattern)
        if (match) finish(() => resolve(match))
      }
      const timer = setTimeout(() => finish(() => reject(new Error(`nothing matched ${pattern} within ${timeoutMs} ms:\n${this.text.slice(-3000)}`))), timeoutMs)
      this.listeners.add(check)
      child.exited.then((code) =>
        // Let the last output arrive before deciding that the line never came.
        setTimeout(() => {
          check()
          if (this.listeners.has(check)) finish(() => reject(new Error(`the process exited (${code}) before printing ${pattern}:\n${this.text.slice(-3000)}`)))
        }, 50),
      )
      check()
    })
  }
}

function gatewayEnv(options: GatewayOptions, dataDir: string, databaseUrl: string | null): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(Bun.env)) if (value !== undefined && !overriddenEnv.includes(name)) env[name] = value
  Object.assign(env, { HOST: '127.0.0.1', PORT: '0', DATA_DIR: dataDir }, options.env)
  if (databaseUrl) env.DATABASE_URL = databaseUrl
  if (options.catalogPath) env.NILEGATE_CONFIG = options.catalogPath
  return env
}

async function stopChild(child: Subprocess, graceMs: number): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM')
    const exited = await Promise.race([child.exited.then(() => true), Bun.sleep(graceMs).then(() => false)])
    if (!exited) child.kill('SIGKILL')
  }
  await child.exited
  running.delete(child)
}

/** What `bun server/cli.ts demo --json` prints. */
export interface DemoTenantJson {
  api_key: string
  organization_id: string
  project_id: string
  email: string
  password: string
}

/** Runs the CLI with the gateway's environment; bounded, so a stuck CLI fails the test instead of hanging it. */
async function runDemoCli(env: Record<string, string>, options: DemoKeyOptions, timeoutMs = 30_000): Promise<DemoTenantJson> {
  const cmd = ['bun', 'server/cli.ts', 'demo', '--json']
  if (options.balanceEgp !== undefined) cmd.push('--balance-egp', String(options.balanceEgp))
  if (options.rpm !== undefined) cmd.push('--rpm', String(options.rpm))
  const child = Bun.spawn(cmd, { cwd: repoDir, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  running.add(child)
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
    if (code !== 0) throw new Error(`${cmd.join(' ')} exited with ${code ?? child.signalCode}:\n${stdout}${stderr}`)
    let printed: Partial<DemoTenantJson>
    try {
      printed = JSON.parse(stdout.slice(stdout.indexOf('{'), stdout.lastIndexOf('}') + 1))
    } catch {
      throw new Error(`${cmd.join(' ')} printed no JSON object:\n${stdout}${stderr}`)
    }
    if (typeof printed.api_key !== 'string') throw new Error(`${cmd.join(' ')} printed no api_key:\n${stdout}`)
    return printed as DemoTenantJson
  } finally {
    clearTimeout(timer)
    running.delete(child)
  }
}

/**
 * Starts `bun server/main.ts` on a free port (PORT=0) and waits for its listening line. Embedded
 * gateways get a temp DATA_DIR holding a migrated PGlite (made once per run: creating one took a
 * gateway seconds of its start; `emptyDataDir` for a first start);
 * Postgres gateways a new database, dropped again by `stop()`.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const dataDir = options.database === 'pglite' && !options.emptyDataDir ? await createMigratedPgliteDir() : createTempDir(`e2e-${options.database}`)
  let postgresDatabase: Awaited<ReturnType<typeof createPostgresDatabase>> | null = null
  let child: Subprocess<'ignore', 'pipe', 'pipe'> | null = null
  const cleanUp = async (graceMs: number) => {
    if (child) await stopChild(child, graceMs)
    await postgresDatabase?.drop()
    dataDir.remove()
  }
  try {
    if (options.database === 'postgres' && !options.sharedDatabaseUrl) postgresDatabase = await createPostgresDatabase()
    const databaseUrl = options.sharedDatabaseUrl ?? postgresDatabase?.url ?? null
    const env = gatewayEnv(options, dataDir.path, databaseUrl)
    child = Bun.spawn(options.viaStartScript ? ['bun', 'run', 'start'] : ['bun', 'server/main.ts'], { cwd: repoDir, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
    running.add(child)
    const log = new OutputLog([child.stdout, child.stderr])
    const [, baseUrl] = await log.waitFor(listeningLine, child, options.startTimeoutMs ?? 30_000)
    const url = new URL(baseUrl!)
    const started = child
    const createDemoTenant = (keyOptions: DemoKeyOptions = {}) =>
      runDemoCli(env, keyOptions).catch((error: Error) => {
        throw new Error(`${error.message}\n--- the gateway printed:\n${log.all.slice(-3000)}`)
      })
    return {
      database: options.database,
      baseUrl: baseUrl!,
      origin: url.origin,
      hostname: url.hostname,
      port: Number(url.port),
      databaseUrl,
      pid: started.pid,
      get isRunning() {
        return started.exitCode === null && started.signalCode === null
      },
      output: () => log.all,
      createApiKey: async (keyOptions = {}) => (await createDemoTenant(keyOptions)).api_key,
      createDemoTenant,
      waitForOutput: (pattern, timeoutMs = 10_000) => log.waitFor(pattern, started, timeoutMs),
      stop: (graceMs = 5_000) => cleanUp(graceMs),
    }
  } catch (error) {
    await cleanUp(1_000)
    throw error
  }
}

/**
 * Starts one gateway for the enclosing file or describe block (beforeAll) and stops it afterwards.
 * Read `.current` inside tests and hooks, not at definition time.
 */
export function useGateway(options: GatewayOptions | (() => GatewayOptions | Promise<GatewayOptions>)): { readonly current: RunningGateway } {
  let gateway: RunningGateway | undefined
  beforeAll(async () => {
    gateway = await startGateway(typeof options === 'function' ? await options() : options)
  }, 60_000)
  afterAll(async () => {
    await gateway?.stop()
  }, 30_000)
  return {
    get current(): RunningGateway {
      if (!gateway) throw new Error('the gateway has not started (see the beforeAll failure above)')
      return gateway
    },
  }
}
