import type { Socket } from 'bun'

interface Connection {
  client: Socket<Connection>
  upstream: Socket<undefined> | null
  /** Bytes from the client before the upstream connection opened. */
  early: Uint8Array[]
}

/**
 * A TCP proxy in front of a server (Redis, Postgres) that a test can silence, cut or close, to see
 * how the gateway behaves when that server stops answering, crashes or is unreachable.
 */
export interface TcpProxy {
  readonly port: number
  /** While true, bytes from clients are swallowed: the server looks alive but never answers. */
  silent: boolean
  /** While true, new connections are closed as soon as they open, as a server that is down would refuse them. */
  refusing: boolean
  /** Connections closed because `refusing` was on: proof that a client tried to reach the server. */
  refused: number
  /** Closes every open connection (as a crash would); new ones are still accepted unless `refusing`. */
  cut(): void
  stop(): void
  /** `url` with its host and port replaced by the proxy's: the same server, reached through the proxy. */
  via(url: string): string
}

export function startTcpProxy(target: { hostname: string; port: number }): TcpProxy {
  const connections = new Set<Connection>()
  const cut = () => {
    for (const connection of connections) {
      connection.upstream?.end()
      connection.client.end()
    }
    connections.clear()
  }
  const server = Bun.listen<Connection>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        const connection: Connection = { client, upstream: null, early: [] }
        client.data = connection
        if (proxy.refusing) {
          proxy.refused += 1
          client.end()
          return
        }
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
            // The connection was cut, or the client left, while this one was opening.
            if (!connections.has(connection)) return void upstream.end()
            connection.upstream = upstream
            for (const bytes of connection.early) upstream.write(bytes)
            connection.early = []
          },
          () => client.end(),
        )
      },
      data(client, bytes) {
        const connection = client.data
        if (proxy.silent || !connections.has(connection)) return
        if (connection.upstream) connection.upstream.write(bytes)
        else connection.early.push(new Uint8Array(bytes))
      },
      close(client) {
        client.data.upstream?.end()
        connections.delete(client.data)
      },
    },
  })
  const proxy: TcpProxy = {
    port: server.port,
    silent: false,
    refusing: false,
    refused: 0,
    cut,
    stop() {
      cut()
      server.stop(true)
    },
    via(url) {
      const routed = new URL(url)
      routed.hostname = '127.0.0.1'
      routed.port = String(server.port)
      return routed.toString()
    },
  }
  return proxy
}

/** A local port nothing listens on. */
export function closedPort(): number {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}
