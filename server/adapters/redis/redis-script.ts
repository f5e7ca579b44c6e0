import { ErrorReply } from 'redis'
import { isRedisCluster, type RedisClusterClient, type RedisConnection } from './connect-redis'

/** What SCRIPT LOAD is sent on: one server's client, or one node's client of a cluster. */
interface ScriptLoader {
  scriptLoad(source: string): Promise<string>
}

function isNoScript(error: unknown): boolean {
  return error instanceof ErrorReply && error.message.startsWith('NOSCRIPT')
}

/**
 * A Lua script run with EVALSHA. Its SHA-1 is computed here, so it can run before SCRIPT LOAD was
 * sent; when Redis answers NOSCRIPT (restarted, or SCRIPT FLUSH), it is loaded again and re-run.
 * On a Redis Cluster it runs on the master of its first key's slot (every key of a script shares
 * one hash tag), and each master keeps its own scripts: NOSCRIPT there (a replica promoted, a node
 * added) is answered by sending the script itself with EVAL, which that node then keeps.
 */
export class RedisScript {
  readonly sha: string
  // One SCRIPT LOAD at a time per client, however many calls hit NOSCRIPT together.
  private readonly loading = new WeakMap<ScriptLoader, Promise<void>>()

  constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = new Bun.CryptoHasher('sha1').update(source).digest('hex')
  }

  load(client: ScriptLoader): Promise<void> {
    let loading = this.loading.get(client)
    if (!loading) {
      loading = client
        .scriptLoad(this.source)
        .then((sha) => {
          if (sha !== this.sha) throw new Error(`redis loaded ${this.name}.lua as ${sha}, expected ${this.sha}`)
        })
        .finally(() => this.loading.delete(client))
      this.loading.set(client, loading)
    }
    return loading
  }

  /** SCRIPT LOAD on the server, or on every master of a cluster. */
  async loadEverywhere(connection: RedisConnection): Promise<void> {
    if (!isRedisCluster(connection)) return this.load(connection)
    await Promise.all(connection.masters.map(async (master) => this.load(await connection.nodeClient(master))))
  }

  async run(connection: RedisConnection, keys: string[], args: string[]): Promise<unknown> {
    if (isRedisCluster(connection)) return this.runOnCluster(connection, keys, args)
    // The command as Redis takes it: node-redis's evalSha builds the same array with a
    // transformation per call, a fifth of the client's CPU for each script run.
    const command = ['EVALSHA', this.sha, String(keys.length), ...keys, ...args]
    try {
      return await connection.sendCommand(command)
    } catch (error) {
      if (!isNoScript(error)) throw error
      await this.load(connection)
      return connection.sendCommand(command)
    }
  }

  private async runOnCluster(cluster: RedisClusterClient, keys: string[], args: string[]): Promise<unknown> {
    const [slotKey] = keys
    if (slotKey === undefined) throw new Error(`${this.name}.lua was given no key to choose its cluster node by`)
    try {
      return await cluster.sendCommand(slotKey, false, ['EVALSHA', this.sha, String(keys.length), ...keys, ...args])
    } catch (error) {
      if (!isNoScript(error)) throw error
      return cluster.sendCommand(slotKey, false, ['EVAL', this.source, String(keys.length), ...keys, ...args])
    }
  }
}
