import { afterAll, beforeAll } from 'bun:test'
import type { Subprocess } from 'bun'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from 'redis'
import { closedPort } from './tcp-proxy'
import { waitFor } from './wait-for'

/** One redis-server of a test cluster. */
export interface ClusterNode {
  /** The client port; the cluster bus listens on a port of its own. */
  readonly port: number
  readonly isRunning: boolean
}

/**
 * A Redis Cluster of 3 masters with a replica each, run by this test process on free loopback ports
 * (nothing kept on disk): the only cluster a test may fail over, kill nodes of, or flush.
 */
export interface RedisClusterUnderTest {
  /** `redis+cluster://127.0.0.1:P1,...`, as REDIS_URL takes it (every node listed). */
  readonly url: string
  readonly nodes: readonly ClusterNode[]
  /** The master serving `key`'s slot now. */
  masterOf(key: string): Promise<ClusterNode>
  /**
   * Fails `master` over to its replica the way an operator does (CLUSTER FAILOVER sent to the
   * replica: the replica catches up first, so no write is lost); resolves once the replica serves
   * the slots and every node says the cluster is ok. Returns the new master.
   */
  failover(master: ClusterNode): Promise<ClusterNode>
  /**
   * Kills `master` with SIGKILL, as a crash would; resolves once it is dead, with its replica and a
   * promise that resolves once the replica took over and every node left says the cluster is ok.
   */
  killMaster(master: ClusterNode): Promise<{ replica: ClusterNode; takenOver: Promise<void> }>
  /** Stops every node and removes their directory. */
  stop(): Promise<void>
}

interface Started {
  port: number
  busPort: number
  server: Subprocess
  watchdog: Subprocess<'pipe', 'ignore', 'ignore'>
  logFile: string
}

/**
 * The nodes' cluster-node-timeout: a master that stops answering is marked failed only after this
 * long, so its replica cannot take over before.
 */
export const clusterNodeTimeoutMs = 1_000
const readyTimeoutMs = 20_000
const running = new Set<Started>()
const directories = new Set<string>()

// bun test runs every file in one process: whatever still runs when it exits goes with it.
process.on('exit', () => {
  for (const node of running) kill(node)
  for (const dir of directories) rmSync(dir, { recursive: true, force: true })
})

function kill(node: Started): void {
  node.watchdog.kill('SIGKILL')
  node.server.kill('SIGKILL')
  running.delete(node)
}

function isAlive(node: Started): boolean {
  return node.server.exitCode === null && node.server.signalCode === null
}

/** Sends one command to the node on `port` over a connection of its own. */
async function ask(port: number, ...command: string[]): Promise<unknown> {
  const client = createClient({ socket: { host: '127.0.0.1', port, connectTimeout: 1_000, reconnectStrategy: false } })
  client.on('error', () => {})
  try {
    await client.connect()
    return await client.sendCommand(command)
  } finally {
    client.destroy()
  }
}

async function askOrNull(port: number, ...command: string[]): Promise<unknown> {
  try {
    return await ask(port, ...command)
  } catch {
    return null
  }
}

/** Starts one cluster-enabled redis-server; null when a port was taken meanwhile. */
async function launch(dir: string): Promise<Started | null> {
  const port = closedPort()
  const busPort = closedPort()
  const logFile = join(dir, `redis-${port}.log`)
  const server = Bun.spawn(
    [
      'redis-server',
      ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1'],
      ...['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(clusterNodeTimeoutMs)],
      ...['--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', logFile],
    ],
    { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
  )
  // Holds a pipe from this process: when this process dies, even by SIGKILL, the read ends and the server goes too.
  const watchdog = Bun.spawn(['sh', '-c', 'read _; kill -KILL "$1"', 'sh', String(server.pid)], { stdin: 'pipe', stdout: 'ignore', stderr: 'ignore' })
  const node = { port, busPort, server, watchdog, logFile }
  running.add(node)
  const deadline = performance.now() + readyTimeoutMs
  while ((await askOrNull(port, 'PING')) !== 'PONG') {
    if (!isAlive(node)) {
      kill(node)
      const log = readFileSync(logFile, { encoding: 'utf8', flag: 'a+' })
      if (/Address already in use/i.test(log)) return null
      throw new Error(`redis-server on port ${port} exited (${server.exitCode ?? server.signalCode}):\n${log.slice(-2000)}`)
    }
    if (performance.now() > deadline) {
      kill(node)
      throw new Error(`redis-server on port ${port} did not answer within ${readyTimeoutMs} ms`)
    }
    await Bun.sleep(10)
  }
  return node
}

/** The `role` and, for a replica, its master's port and link state, from ROLE. */
async function roleOf(port: number): Promise<{ role: string; masterPort: number | null; linked: boolean } | null> {
  const reply = (await askOrNull(port, 'ROLE')) as [string, ...unknown[]] | null
  if (!reply) return null
  if (reply[0] !== 'slave') return { role: reply[0], masterPort: null, linked: false }
  return { role: 'replica', masterPort: Number(reply[2]), linked: reply[3] === 'connected' }
}

async function clusterOk(port: number): Promise<boolean> {
  const info = (await askOrNull(port, 'CLUSTER', 'INFO')) as string | null
  return info !== null && /cluster_state:ok/.test(info) && /cluster_slots_assigned:16384/.test(info)
}

/** Whether the node says the cluster is ok and, if it is a replica, follows its master. */
async function isServing(port: number): Promise<boolean> {
  if (!(await clusterOk(port))) return false
  const role = await roleOf(port)
  return role?.role === 'master' || role?.linked === true
}

/**
 * Starts 6 cluster-enabled redis-servers, forms them into 3 masters with a replica each
 * (`redis-cli --cluster create`), and waits until every node says the cluster is ok and every
 * replica follows its master.
 */
export async function startRedisCluster(): Promise<RedisClusterUnderTest> {
  const dir = mkdtempSync(join(tmpdir(), 'nilegate-redis-cluster-'))
  directories.add(dir)
  const started: Started[] = []
  const stop = async () => {
    for (const node of started) kill(node)
    await Promise.all(started.map((node) => node.server.exited))
    rmSync(dir, { recursive: true, force: true })
    directories.delete(dir)
  }
  try {
    while (started.length < 6) {
      let node: Started | null = null
      for (let attempt = 0; attempt < 5 && !node; attempt++) node = await launch(dir)
      if (!node) throw new Error('redis-server found no free port pair in 5 tries')
      started.push(node)
    }
    const create = Bun.spawn(['redis-cli', '--cluster', 'create', ...started.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '1', '--cluster-yes'], {
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [output, errors, code] = await Promise.all([new Response(create.stdout).text(), new Response(create.stderr).text(), create.exited])
    if (code !== 0) throw new Error(`redis-cli --cluster create exited with ${code}:\n${output}${errors}`)
    await waitFor(async () => (await Promise.all(started.map((node) => isServing(node.port)))).every(Boolean), {
      timeoutMs: readyTimeoutMs,
      what: 'a formed cluster with every replica following its master',
    })
  } catch (error) {
    await stop()
    throw error
  }

  const nodes: ClusterNode[] = started.map((node) => ({
    port: node.port,
    get isRunning() {
      return isAlive(node)
    },
  }))
  const live = () => started.filter(isAlive)
  const nodeOn = (port: number) => nodes.find((node) => node.port === port)!
  const replicaOf = async (master: ClusterNode) => {
    for (const node of live()) if ((await roleOf(node.port))?.masterPort === master.port) return nodeOn(node.port)
    throw new Error(`no replica follows the master on port ${master.port}`)
  }
  const settled = (promoted: ClusterNode, what: string) =>
    waitFor(async () => (await roleOf(promoted.port))?.role === 'master' && (await Promise.all(live().map((node) => clusterOk(node.port)))).every(Boolean), {
      timeoutMs: readyTimeoutMs,
      what,
    })

  return {
    url: `redis+cluster://${started.map((node) => `127.0.0.1:${node.port}`).join(',')}`,
    nodes,
    async masterOf(key) {
      const [any] = live()
      const slot = Number(await ask(any!.port, 'CLUSTER', 'KEYSLOT', key))
      const ranges = (await ask(any!.port, 'CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>
      const range = ranges.find(([from, to]) => from <= slot && slot <= to)
      if (!range) throw new Error(`no master serves slot ${slot}`)
      return nodeOn(Number(range[2][1]))
    },
    async failover(master) {
      const replica = await replicaOf(master)
      const reply = await ask(replica.port, 'CLUSTER', 'FAILOVER')
      if (reply !== 'OK') throw new Error(`CLUSTER FAILOVER answered ${String(reply)}`)
      await settled(replica, `the replica on port ${replica.port} serving in place of ${master.port}`)
      return replica
    },
    async killMaster(master) {
      const replica = await replicaOf(master)
      const node = started.find((candidate) => candidate.port === master.port)!
      kill(node)
      await node.server.exited
      const takenOver = settled(replica, `the replica on port ${replica.port} promoted after its master on ${master.port} was killed`)
      // A caller that fails before waiting for it must not leave an unhandled rejection behind.
      takenOver.catch(() => {})
      return { replica, takenOver }
    },
    stop,
  }
}

/** Starts a cluster of the file's (or describe block's) own before its tests and stops it after them. Read `.current` inside hooks and tests. */
export function useRedisCluster(): { readonly current: RedisClusterUnderTest } {
  let cluster: RedisClusterUnderTest | undefined
  beforeAll(async () => {
    cluster = await startRedisCluster()
  }, 60_000)
  afterAll(async () => {
    await cluster?.stop()
  }, 30_000)
  return {
    get current(): RedisClusterUnderTest {
      if (!cluster) throw new Error('the Redis Cluster has not started (see the beforeAll failure above)')
      return cluster
    },
  }
}
