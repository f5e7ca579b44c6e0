import { ErrorReply } from 'redis'
import type { RedisClient } from './client'

/**
 * A Lua script run with EVALSHA. Its SHA-1 is computed here, so it can run before SCRIPT LOAD was
 * sent; when Redis answers NOSCRIPT (restarted, or SCRIPT FLUSH), it is loaded again and re-run.
 */
export class RedisScript {
  readonly sha: string
  // One SCRIPT LOAD at a time per client, however many calls hit NOSCRIPT together.
  private readonly loading = new WeakMap<RedisClient, Promise<void>>()

  constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = new Bun.CryptoHasher('sha1').update(source).digest('hex')
  }

  load(client: RedisClient): Promise<void> {
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

  async run(client: RedisClient, keys: string[], args: string[]): Promise<unknown> {
    // The command as Redis takes it: node-redis's evalSha builds the same array with a
    // transformation per call, a fifth of the client's CPU for each script run.
    const command = ['EVALSHA', this.sha, String(keys.length), ...keys, ...args]
    try {
      return await client.sendCommand(command)
    } catch (error) {
      if (!(error instanceof ErrorReply) || !error.message.startsWith('NOSCRIPT')) throw error
      await this.load(client)
      return client.sendCommand(command)
    }
  }
}
