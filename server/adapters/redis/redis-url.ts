/** One address of a Redis Cluster node. */
export interface RedisNodeAddress {
  host: string
  port: number
}

/** What REDIS_URL names: one Redis server, or the nodes a Redis Cluster client starts from. */
export type RedisTarget =
  | { cluster: false; url: string }
  | { cluster: true; nodes: RedisNodeAddress[]; username?: string; password?: string; tls: boolean }

const clusterScheme = /^(rediss?)\+cluster:\/\//i
const clusterExample = 'redis+cluster://10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379'

/**
 * Reads REDIS_URL. `redis://` and `rediss://` URLs name one server, as node-redis reads them. A
 * Redis Cluster is `redis+cluster://[user:password@]host:port[,host:port...]` (`rediss+cluster://`
 * for TLS): a few of its nodes, from which the client learns the rest. A cluster has database 0
 * only, so no path or query may follow. Errors never repeat the URL, which may hold a password.
 */
export function parseRedisUrl(url: string): RedisTarget {
  const scheme = clusterScheme.exec(url)
  if (!scheme) return { cluster: false, url }
  let rest = url.slice(scheme[0].length)
  if (rest.endsWith('/0')) rest = rest.slice(0, -2)
  else if (rest.endsWith('/')) rest = rest.slice(0, -1)
  if (/[/?#]/.test(rest)) throw new Error(`a Redis Cluster URL names nodes only (a cluster has database 0 alone), as in ${clusterExample}`)
  const at = rest.lastIndexOf('@')
  const credentials = at === -1 ? null : rest.slice(0, at)
  const hosts = at === -1 ? rest : rest.slice(at + 1)
  const nodes = hosts.split(',').map((node) => parseNode(node.trim()))
  const target: RedisTarget = { cluster: true, nodes, tls: scheme[1]!.toLowerCase() === 'rediss' }
  if (credentials !== null) {
    const colon = credentials.indexOf(':')
    const username = decodeURIComponent(colon === -1 ? credentials : credentials.slice(0, colon))
    const password = colon === -1 ? '' : decodeURIComponent(credentials.slice(colon + 1))
    if (username) target.username = username
    if (password) target.password = password
  }
  return target
}

function parseNode(node: string): RedisNodeAddress {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+)(?::(\d+))?$/.exec(node)
  const port = Number(match?.[2] ?? 6379)
  if (!match || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`"${node}" is not a host:port of a Redis Cluster node; list them as in ${clusterExample}`)
  }
  const host = match[1]!.startsWith('[') ? match[1]!.slice(1, -1) : match[1]!
  return { host, port }
}
