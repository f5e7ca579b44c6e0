import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { describeExit, type ProcessGroup } from './process-group'

export interface RunningGateway {
  /** Ends in /v1. */
  baseUrl: string
  pid: number
  keys: string[]
  /** The demo tenant that owns every key: for signing in to the management API. */
  tenant: DemoCredentials
  /** Makes `count` more keys in the tenant's project through the management API. */
  createKeys(count: number): Promise<string[]>
  /** The keys, one a line, for the load tools. */
  keysFile: string
  /** Why the gateway is no longer running (exit code or signal, and the end of its log), or null while it runs. */
  exitReport(): Promise<string | null>
  /** Ends the gateway gracefully (so a CPU profile gets written) and waits for it. */
  stop(): Promise<void>
}

export interface GatewayLaunch {
  processes: ProcessGroup
  workDir: string
  repoDir: string
  upstreamBaseUrl: string
  /** How many API keys to create, all in one demo tenant's project. */
  keys: number
  /** Start the gateway under `bun --cpu-prof` and write the profile here. */
  profileDir: string | null
  /** Run on this Postgres database instead of the embedded PGlite. */
  databaseUrl: string | null
  /** Keep admission counters in this Redis (flushed first) instead of in process. */
  redisUrl?: string | null
  /** More environment, e.g. METRICS=off. */
  env?: Record<string, string>
  /** The catalog file to serve instead of `benchCatalog(upstreamBaseUrl)`; it must still list that catalog's models. */
  catalog?: { models: object[] }
}

const samplePrices = { input_price_egp: '30.00', output_price_egp: '90.00', prices_are_samples: true }
const chatModel = {
  modality: 'chat',
  context_window: 131072,
  max_output_tokens: 8192,
  region: 'EG',
  weights: 'Open weights',
  published: '2024-12-06',
  ...samplePrices,
}

/** The catalog file (the format of server/catalog-file.ts): one model per provider under test. */
export function benchCatalog(upstreamBaseUrl: string) {
  return {
    models: [
      {
        id: 'bench/upstream-echo',
        owned_by: 'bench (fake upstream)',
        ...chatModel,
        deployments: [{ provider: 'openai-compatible', base_url: upstreamBaseUrl, upstream_model: 'fake-echo' }],
      },
      {
        id: 'bench/upstream-echo-x4',
        owned_by: 'bench (fake upstream)',
        ...chatModel,
        deployments: ['a', 'b', 'c', 'd'].map((name) => ({ id: `echo-${name}`, provider: 'openai-compatible', base_url: upstreamBaseUrl, upstream_model: 'fake-echo' })),
      },
      {
        id: 'bench/simulated',
        owned_by: 'nilegate (simulator)',
        ...chatModel,
        deployments: [{ provider: 'simulator', simulator: { ttft_ms: 0, inter_token_ms: 0 } }],
      },
    ],
  }
}

function freePort(): number {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

async function waitUntilListening(baseUrl: string, child: Subprocess, logPath: string, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the gateway exited (${child.exitCode ?? child.signalCode}) while starting:\n${(await Bun.file(logPath).text()).slice(-3000)}`)
    }
    try {
      // Any answer, 401 included, means it serves HTTP.
      await fetch(`${baseUrl}/models`, { signal: AbortSignal.timeout(1_000) })
      return
    } catch {
      await Bun.sleep(100)
    }
  }
  throw new Error(`the gateway did not answer on ${baseUrl} within ${timeoutMs} ms:\n${(await Bun.file(logPath).text()).slice(-3000)}`)
}

/** What `server/cli.ts demo --json` prints, as far as the bench uses it. */
export interface DemoCredentials {
  api_key: string
  project_id: string
  email: string
  password: string
}

/** Runs `bun server/cli.ts demo --json` against the running gateway and returns the new tenant. */
async function createDemoTenant(launch: GatewayLaunch, env: Record<string, string>, index: number): Promise<DemoCredentials> {
  const logPath = join(launch.workDir, `cli-demo-${index}.out`)
  const errorLogPath = join(launch.workDir, `cli-demo-${index}.err`)
  const cmd = ['bun', 'server/cli.ts', 'demo', '--json', '--rpm', '1000000', '--balance-egp', '1000000']
  const child = launch.processes.spawn(cmd, { env, cwd: launch.repoDir, logPath, errorLogPath })
  const exitCode = await child.exited
  const output = await Bun.file(logPath).text()
  if (exitCode !== 0) throw new Error(`${cmd.join(' ')} exited with ${exitCode}:\n${output}${await Bun.file(errorLogPath).text()}`)
  const demo = JSON.parse(output.slice(output.indexOf('{'), output.lastIndexOf('}') + 1)) as Partial<DemoCredentials>
  if (typeof demo.api_key !== 'string') throw new Error(`${cmd.join(' ')} printed no api_key:\n${output}`)
  return demo as DemoCredentials
}

async function json(response: Response, what: string): Promise<any> {
  const text = await response.text()
  if (!response.ok) throw new Error(`${what}: ${response.status} ${text.slice(0, 500)}`)
  return JSON.parse(text)
}

/** Signs in as `tenant` and creates `count` keys in its project, eight requests at a time. */
async function createKeysOverHttp(baseUrl: string, tenant: DemoCredentials, count: number): Promise<string[]> {
  if (count <= 0) return []
  const login = await json(
    await fetch(`${baseUrl}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: tenant.email, password: tenant.password }) }),
    'logging in',
  )
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${login.access_token}` }
  const url = `${baseUrl}/organization/projects/${tenant.project_id}/api_keys`
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

/** Starts `bun server/main.ts` on a free port with a temporary DATA_DIR and the bench catalog, and makes keys. */
export async function startGateway(launch: GatewayLaunch): Promise<RunningGateway> {
  const catalogPath = join(launch.workDir, 'catalog.json')
  await Bun.write(catalogPath, JSON.stringify(launch.catalog ?? benchCatalog(launch.upstreamBaseUrl), null, 2))
  const port = freePort()
  // The embedded defaults unless Postgres was asked for, and metrics as the bench asks, whatever the calling shell has set.
  const { DATABASE_URL: _database, REDIS_URL: _redis, METRICS: _metrics, METRICS_TOKEN: _metricsToken, ...inherited } = Bun.env
  const env = {
    ...inherited,
    ...launch.env,
    ...(launch.databaseUrl ? { DATABASE_URL: launch.databaseUrl } : {}),
    ...(launch.redisUrl ? { REDIS_URL: launch.redisUrl } : {}),
    // As `bun start` has it: started without, the gateway answers 503 past 256 requests in flight upstream.
    BUN_CONFIG_MAX_HTTP_REQUESTS: Bun.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? '8192',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: join(launch.workDir, 'data'),
    NILEGATE_CONFIG: catalogPath,
  } as Record<string, string>
  const profile = launch.profileDir ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${launch.profileDir}`] : []
  if (launch.profileDir) mkdirSync(launch.profileDir, { recursive: true })
  const logPath = join(launch.workDir, 'gateway.log')
  const child = launch.processes.spawn(['bun', ...profile, 'server/main.ts'], { env, cwd: launch.repoDir, logPath })
  const baseUrl = `http://127.0.0.1:${port}/v1`
  await waitUntilListening(baseUrl, child, logPath, 60_000)

  // One tenant from the CLI, the other keys through the management API: the gateway holds each key
  // to 100 req/s at the edge, so a fast machine needs a thousand of them.
  const tenant = await createDemoTenant(launch, env, 0)
  const createKeys = (count: number) => createKeysOverHttp(baseUrl, tenant, count)
  const keys = [tenant.api_key, ...(await createKeys(launch.keys - 1))]
  const keysFile = join(launch.workDir, 'keys.txt')
  await Bun.write(keysFile, keys.join('\n') + '\n')

  const models = await fetch(`${baseUrl}/models`, { headers: { authorization: `Bearer ${keys[0]}` } })
  const listed = await models.text()
  if (models.status !== 200 || !listed.includes('bench/upstream-echo') || !listed.includes('bench/simulated')) {
    throw new Error(`GET /v1/models does not list the bench models (status ${models.status}): ${listed.slice(0, 500)}`)
  }

  return {
    baseUrl,
    pid: child.pid,
    keys,
    tenant,
    createKeys,
    keysFile,
    exitReport: () => describeExit('the gateway', child, logPath),
    async stop() {
      child.kill('SIGTERM')
      const exited = await Promise.race([child.exited.then(() => true), Bun.sleep(10_000).then(() => false)])
      if (!exited) child.kill('SIGKILL')
    },
  }
}

/**
 * Creates an empty database on the Postgres server at `serverUrl` for one run; `drop()` removes it
 * (call it after the gateway has stopped).
 */
export async function createScratchDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `nilegate_bench_${Date.now()}_${process.pid}`
  const admin = new Bun.SQL(serverUrl, { max: 1 })
  try {
    await admin.unsafe(`create database ${name}`)
  } finally {
    await admin.close()
  }
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const dropper = new Bun.SQL(serverUrl, { max: 1 })
      try {
        await dropper.unsafe(`drop database if exists ${name} with (force)`)
      } finally {
        await dropper.close()
      }
    },
  }
}
