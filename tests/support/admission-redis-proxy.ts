import type { Socket } from 'bun'

interface Connection {
  client: Socket<Connection>
  upstream: Socket<undefined> | null
  /** Bytes from the client before the upstream connection opened. */
  early: Uint8Array[]
}

/** A TCP proxy in front of Redis that a test can silence or cut, to see the gateway fail closed. */
export interface RedisProxy {
  url: string
  /** While true, commands are swallowed: Redis looks alive but never answers. */
  silent: boolean
  /** Closes every open connection (as a Redis crash would); new ones are still accepted. */
  cut(): void
  stop(): void
}

export function startRedisProxy(target: { hostname: string; port: number }): RedisProxy {
  const connections = new Set<Connection>()
  const proxy: RedisProxy = {
    url: '',
    silent: false,
    cut() {
      for (const connection of connections) {
        connection.upstream?.end()
        connection.client.end()
      }
      connections.clear()
    },
    stop() {
      proxy.cut()
      server.stop(true)
    },
  }
  const server = Bun.listen<Connection>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        const connection: Connection = { client, upstream: null, early: [] }
        client.data = connection
        connections.add(connection)
        Bun.connect({
          ...target,
          socket: {
            data: (_upstream, bytes) => void client.write(bytes),
            close: () => void client.end(),
            error: () => void client.end(),
          },
        }).then(
          (upstream) => {
            connection.upstream = upstream
            for (const bytes of connection.early) upstream.write(bytes)
            connection.early = []
          },
          () => client.end(),
        )
      },
      data(client, bytes) {
        if (proxy.silent) return
        const connection = client.data
        if (connection.upstream) connection.upstream.write(bytes)
        else connection.early.push(new Uint8Array(bytes))
      },
      close(client) {
        client.data.upstream?.end()
        connections.delete(client.data)
      },
    },
  })
  proxy.url = `redis://127.0.0.1:${server.port}`
  return proxy
}

/** A local port nothing listens on. */
export function closedPort(): number {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}
