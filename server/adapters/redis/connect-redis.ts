import { createClient, createCluster, RedisCluster } from 'redis'
import { createRedisClient, reconnectDelayMs, type RedisClient, type RedisClientOptions } from './client'
import { parseRedisUrl, type RedisNodeAddress } from './redis-url'

/** A node-redis Redis Cluster client, as `createRedisClusterClient` makes it. */
export type RedisClusterClient = ReturnType<typeof createRedisClusterClient>

/** What every Redis adapter of the gateway takes: one server's client, or a Redis Cluster's. */
export type RedisConnection = RedisClient | RedisClusterClient

/** Whether `connection` is a Redis Cluster client (commands routed by their first key). */
export function isRedisCluster(connection: RedisConnection): connection is RedisClusterClient {
  return connection instanceof RedisCluster
}

/**
 * Opens REDIS_URL (see `parseRedisUrl`): one server's client, or a cluster client for a
 * `redis+cluster://` URL. Either fails fast while it cannot reach Redis and reconnects in the
 * background; throws at once on a URL it cannot read.
 */
export function connectRedis(url: string, options: RedisClientOptions = {}): RedisConnection {
  const target = parseRedisUrl(url)
  if (!target.cluster) return createRedisClient(url, options)
  const { nodes, ...auth } = target
  return createRedisClusterClient(nodes, auth, options)
}

interface NodeDefaults {
  username?: string
  password?: string
  tls: boolean
  connectTimeoutMs: number
}

// How each cluster client reaches nodes, for the single-node connections made beside it.
const nodeDefaults = new WeakMap<object, { roots: RedisNodeAddress[]; defaults: NodeDefaults }>()

/**
 * A Redis Cluster client that fails fast like `createRedisClient`: a command for a slot whose
 * master cannot be reached is refused at once (no offline queue), so the gateway answers 503 rather
 * than waiting. While a node does not answer, the client reads the cluster's topology again about
 * every half second, and commands for its slots move to the replica promoted in its place. It keeps trying to reach the cluster in the background; close it with
 * `destroy()` or `close()`.
 */
export function createRedisClusterClient(roots: RedisNodeAddress[], auth: { username?: string; password?: string; tls: boolean }, options: RedisClientOptions = {}) {
  const log = options.log ?? ((message: string) => console.error(message))
  const defaults: NodeDefaults = { ...auth, connectTimeoutMs: options.connectTimeoutMs ?? 1_000 }
  const cluster = createCluster({
    rootNodes: roots.map(({ host, port }) => ({ socket: { host, port } })),
    defaults: {
      username: defaults.username,
      password: defaults.password,
      disableOfflineQueue: true,
      socket: { connectTimeout: defaults.connectTimeoutMs, reconnectStrategy: nodeReconnectDelayMs, ...(defaults.tls ? { tls: true as const } : {}) },
    },
    // As for one server: callers bound their calls with `withDeadline` (client.ts says why).
    commandOptions: { timeout: 0 },
    // Checked at a node's reconnect attempts, which come at least every half second: the topology
    // is read again about every half second while a node stays away, until a replica serves its slots.
    topologyRefreshOnReconnectionAttemptStrategy: 500,
  })
  nodeDefaults.set(cluster, { roots, defaults })
  reportOutages(cluster, log)
  let closed = false
  cluster.on('disconnect', () => {
    closed = true
  })
  // Unlike one server's client, a cluster client that reached no node at first stops trying.
  const connect = (attempt: number) => {
    cluster.connect().catch(() => {
      if (!closed) setTimeout(() => !closed && connect(attempt + 1), reconnectDelayMs(attempt)).unref()
    })
  }
  connect(0)
  return cluster
}

/**
 * How long a cluster node's connection waits before its next reconnect: as for one server, but at
 * most half a second, since each attempt is also when the client may read the topology again.
 */
function nodeReconnectDelayMs(retries: number): number {
  return Math.min(reconnectDelayMs(retries), 500)
}

/** Logs each outage once: the cluster's (no node reached) and each node's, and their ends. */
function reportOutages(cluster: RedisCluster<any, any, any, any, any>, log: (message: string) => void): void {
  let clusterDown = false
  const nodesDown = new Set<string>()
  cluster.on('error', (error: Error) => {
    if (clusterDown) return
    clusterDown = true
    log(`redis cluster: ${error.message}; commands fail with service_unavailable until it is reached`)
  })
  cluster.on('connect', () => {
    if (clusterDown) log('redis cluster: reached again')
    clusterDown = false
  })
  cluster.on('node-error', (error: Error, node: RedisNodeAddress) => {
    const address = `${node.host}:${node.port}`
    if (nodesDown.has(address)) return
    nodesDown.add(address)
    log(`redis cluster node ${address}: ${error.message}; commands for its slots fail with service_unavailable until it or a replica in its place answers`)
  })
  cluster.on('node-ready', (node: RedisNodeAddress) => {
    const address = `${node.host}:${node.port}`
    if (nodesDown.delete(address)) log(`redis cluster node ${address}: connected again`)
  })
}

/**
 * A single-node connection to one node of `cluster`: the `index`-th of the masters it knows (or of
 * the nodes it started from), counting round. Redis Cluster broadcasts PUBLISH to every node, so a
 * subscriber on any node hears every message. The connection gives up after a few failed
 * reconnects and emits 'terminated', so that its owner can move to another node.
 */
export function connectToClusterNode(cluster: RedisClusterClient, index: number): RedisClient {
  const known = nodeDefaults.get(cluster)
  if (!known) throw new Error('the cluster client was not made by createRedisClusterClient')
  const masters = cluster.masters.map(({ host, port }) => ({ host, port }))
  const nodes = masters.length > 0 ? masters : known.roots
  const { host, port } = nodes[index % nodes.length]!
  const { username, password, tls, connectTimeoutMs } = known.defaults
  return createClient({
    username,
    password,
    disableOfflineQueue: true,
    socket: {
      host,
      port,
      connectTimeout: connectTimeoutMs,
      reconnectStrategy: (retries) => (retries >= 3 ? new Error(`redis cluster node ${host}:${port} did not answer 3 reconnects`) : reconnectDelayMs(retries)),
      ...(tls ? { tls: true as const } : {}),
    },
  })
}
