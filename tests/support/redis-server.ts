import { afterAll, beforeAll } from 'bun:test'
import type { Subprocess } from 'bun'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from 'redis'
import { closedPort } from './tcp-proxy'

/**
 * A redis-server this test process started on a free loopback port, keeping nothing on disk: the
 * only kind of Redis a test may flush, restart or kill.
 */
export interface RedisServer {
  readonly port: number
  /** `redis://127.0.0.1:PORT/DATABASE`. */
  url(database?: number): string
  /** Kills the server, as a crash would, and starts an empty one (no data, no scripts) on the same port. */
  restart(): Promise<void>
  stop(): Promise<void>
}

/** A running redis-server and the watchdog that kills it if this process dies without cleaning up. */
interface Running {
  server: Subprocess
  watchdog: Subprocess<'pipe', 'ignore', 'ignore'>
}

const startTimeoutMs = 10_000
const started = new Map<number, { dir: string; running: Running | null }>()

// Whatever still runs when a script exits goes with it. (bun test emits no 'exit': there the
// watchdogs below see to it.)
process.on('exit', () => {
  for (const { dir, running } of started.values()) {
    if (running) kill(running)
    rmSync(dir, { recursive: true, force: true })
  }
})

function kill({ server, watchdog }: Running): void {
  watchdog.kill('SIGKILL')
  server.kill('SIGKILL')
}

/** Whether the server on `port` answers PING (a connection refused, or LOADING, is a no). */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    let reply = ''
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open: (socket) => void socket.write('PING\r\n'),
        data(socket, bytes) {
          reply += bytes.toString()
          if (!reply.includes('\r\n')) return
          // Before end(): its close handler runs at once.
          resolve(reply.startsWith('+PONG'))
          socket.end()
        },
        close: () => resolve(false),
        error: () => resolve(false),
        connectError: () => resolve(false),
      },
    }).catch(() => resolve(false))
  })
}

/** Starts redis-server on `port`; null when it exits before answering (the port was taken meanwhile). */
async function launch(port: number, dir: string): Promise<Running | null> {
  const logFile = join(dir, `redis-${port}.log`)
  const server = Bun.spawn(
    ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', logFile],
    { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
  )
  // Holds a pipe from this process: when this process ends, however it ends, the read returns and
  // the server and its directory go too.
  const watchdog = Bun.spawn(['sh', '-c', 'read _; kill -KILL "$1"; rm -rf -- "$2"', 'sh', String(server.pid), dir], { stdin: 'pipe', stdout: 'ignore', stderr: 'ignore' })
  // Neither keeps this process alive: the exit hook above ends them.
  server.unref()
  watchdog.unref()
  const running = { server, watchdog }
  const deadline = performance.now() + startTimeoutMs
  while (!(await answersPing(port))) {
    if (server.exitCode !== null || server.signalCode !== null) {
      watchdog.kill('SIGKILL')
      const log = readFileSync(logFile, { encoding: 'utf8', flag: 'a+' })
      if (/Address already in use/i.test(log)) return null
      throw new Error(`redis-server on port ${port} exited (${server.exitCode ?? server.signalCode}):\n${log.slice(-2000)}`)
    }
    if (performance.now() > deadline) {
      kill(running)
      throw new Error(`redis-server on port ${port} did not answer within ${startTimeoutMs} ms`)
    }
    await Bun.sleep(10)
  }
  return running
}

/** Starts a redis-server of this test process's own on a free loopback port. */
export async function startRedisServer(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'nilegate-redis-'))
  let port = 0
  let running: Running | null = null
  try {
    for (let attempt = 0; attempt < 5 && !running; attempt++) {
      port = closedPort()
      running = await launch(port, dir)
    }
    if (!running) throw new Error('redis-server found no free port in 5 tries')
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const entry = { dir, running: running as Running | null }
  started.set(port, entry)
  const stopRunning = async () => {
    if (!entry.running) return
    kill(entry.running)
    await entry.running.server.exited
    entry.running = null
  }
  return {
    port,
    url: (database = 0) => `redis://127.0.0.1:${port}/${database}`,
    async restart() {
      await stopRunning()
      entry.running = await launch(port, dir)
      if (!entry.running) throw new Error(`port ${port} was taken while its redis-server restarted`)
    },
    async stop() {
      await stopRunning()
      started.delete(port)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Starts a redis-server of the file's (or describe block's) own before its tests and stops it after
 * them. Bun runs a block's afterAll hooks in the order they were registered, so start the gateways
 * that use it in a nested block: they stop before it. Read `.current` inside hooks and tests.
 */
export function useRedisServer(): { readonly current: RedisServer } {
  let server: RedisServer | undefined
  beforeAll(async () => {
    server = await startRedisServer()
  })
  afterAll(async () => {
    await server?.stop()
  })
  return {
    get current(): RedisServer {
      if (!server) throw new Error('the redis-server has not started (see the beforeAll failure above)')
      return server
    },
  }
}

let shared: Promise<RedisServer> | null = null

/**
 * The Redis the suites share: TEST_REDIS_URL when set, as given (never flushed: tests use key
 * prefixes of their own and delete only their keys), else database `database` of one redis-server
 * of this test process, started on first use and gone when the process exits. Files whose gateway
 * processes write unprefixed keys take a database index each.
 */
export async function testRedisUrl(database = 0): Promise<string> {
  if (Bun.env.TEST_REDIS_URL) return Bun.env.TEST_REDIS_URL
  shared ??= startRedisServer()
  return (await shared).url(database)
}

/** Where the Redis of `url` listens, for a proxy in front of it. */
export function redisAddress(url: string): { hostname: string; port: number } {
  const { hostname, port } = new URL(url)
  return { hostname: hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1', port: Number(port || 6379) }
}

/** Whether `url` names a redis-server this process started (and may flush). */
export function isOwnRedis(url: string): boolean {
  const { hostname, port } = new URL(url)
  return hostname === '127.0.0.1' && started.has(Number(port))
}

/**
 * Empties the Redis database at `url`; with `scripts`, also drops every loaded script (as a restart
 * without persistence would); with `data: false`, only that. Refuses any server this process did not start.
 */
export async function flushOwnRedis(url: string, { data = true, scripts = false } = {}): Promise<void> {
  if (!isOwnRedis(url)) throw new Error(`refusing to flush ${url}: the tests did not start that server`)
  const client = await createClient({ url }).connect()
  try {
    if (data) await client.flushDb()
    if (scripts) await client.scriptFlush()
  } finally {
    await client.close()
  }
}
