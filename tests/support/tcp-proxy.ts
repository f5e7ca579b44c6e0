import type { Socket } from 'bun'

/**
 * One direction of a proxied connection. A socket's `write` may take only part of the bytes when
 * the kernel's buffer is full; the rest waits here, in order, until the socket drains.
 */
class Outgoing {
  socket: Socket<unknown> | null = null
  private pending: Uint8Array[] = []
  private ending = false

  send(bytes: Uint8Array): void {
    if (this.socket && this.pending.length === 0) {
      const written = this.socket.write(bytes)
      if (written < 0 || written === bytes.byteLength) return
      bytes = bytes.subarray(written)
    }
    // A copy: the caller's buffer may be reused once its data handler returns.
    this.pending.push(new Uint8Array(bytes))
  }

  /** Writes what waits, as far as the socket takes it; ends the socket once all is out if asked to. */
  flush(): void {
    const socket = this.socket
    if (!socket) return
    while (this.pending.length > 0) {
      const chunk = this.pending[0]!
      const written = socket.write(chunk)
      if (written < 0) {
        this.pending = []
        break
      }
      if (written < chunk.byteLength) {
        this.pending[0] = chunk.subarray(written)
        return
      }
      this.pending.shift()
    }
    if (this.ending) socket.end()
  }

  /** Ends the socket after what is still waiting has gone out. */
  endAfterFlush(): void {
    this.ending = true
    this.flush()
  }

  /** Ends at once, dropping what waits (as a crash would). */
  cut(): void {
    this.pending = []
    this.socket?.end()
  }
}

interface Connection {
  toClient: Outgoing
  toServer: Outgoing
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
      connection.toServer.cut()
      connection.toClient.cut()
    }
    connections.clear()
  }
  const server = Bun.listen<Connection>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        const connection: Connection = { toClient: new Outgoing(), toServer: new Outgoing() }
        connection.toClient.socket = client as Socket<unknown>
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
            data: (_upstream, bytes) => connection.toClient.send(bytes),
            drain: () => connection.toServer.flush(),
            close: () => connection.toClient.endAfterFlush(),
            error: () => connection.toClient.endAfterFlush(),
          },
        }).then(
          (upstream) => {
            // The connection was cut, or the client left, while this one was opening.
            if (!connections.has(connection)) return void upstream.end()
            connection.toServer.socket = upstream as Socket<unknown>
            connection.toServer.flush()
          },
          () => client.end(),
        )
      },
      data(client, bytes) {
        const connection = client.data
        if (proxy.silent || !connections.has(connection)) return
        connection.toServer.send(bytes)
      },
      drain(client) {
        client.data.toClient.flush()
      },
      close(client) {
        client.data.toServer.endAfterFlush()
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
