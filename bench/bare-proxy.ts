// The least a proxy in front of the fake upstream can do on Bun: read the body, POST it upstream,
// parse the JSON answer and send it back. No authentication, limits, billing or validation: the
// bench's reference for what the gateway's own work costs on top.
//
// `--client fetch` (the default) sends with fetch, as the gateway does: Bun runs fetch's HTTP on a
// thread of its own, so every exchange crosses threads twice. `--client socket` writes HTTP/1.1 on
// keep-alive sockets of this thread (Bun.connect) instead: what the same forwarding costs without
// that crossing. It speaks just enough HTTP for the fake upstream's non-streamed answers (a status
// line, headers with Content-Length, the body) and is a measuring stick, not a client to build on.
//
// `--framework elysia` serves the same forwarding through Elysia with the gateway's shape and none
// of its work: a request hook setting X-Request-Id, a parser reading the body as JSON, an async
// derive, the gateway's own body schema (ChatCompletionRequest, TypeBox), an after-handle hook, an
// error hook, and the answer returned as an object for Elysia to serialize. What it costs beyond
// `--framework bun` is what the framework costs the gateway, before any of the gateway's own work.
//
// A streamed request (`"stream":true` in its body), with fetch and Bun.serve alone: `--events pass`
// (the default) answers with the upstream's body as it is, what passing a stream on costs on Bun;
// `--events relay` reads the events, parses each, sets its model and writes it again on a direct
// stream, as the gateway must at the least to read each event (its usage) and check it.
//
//   bun bench/bare-proxy.ts --upstream http://127.0.0.1:PORT/v1 [--port 0] [--client fetch|socket] [--framework bun|elysia] [--events pass|relay]
//
// Prints `bare-proxy listening on http://127.0.0.1:PORT/v1` once it accepts connections.
import type { Socket } from 'bun'
import { argValue } from './arg-value'

const upstream = argValue(Bun.argv, ['--upstream'])
if (!upstream) throw new Error('--upstream URL is required')
const target = new URL(`${upstream}/chat/completions`)
const client = argValue(Bun.argv, ['--client']) ?? 'fetch'
if (client !== 'fetch' && client !== 'socket') throw new Error(`--client must be fetch or socket, got ${client}`)
const framework = argValue(Bun.argv, ['--framework']) ?? 'bun'
if (framework !== 'bun' && framework !== 'elysia') throw new Error(`--framework must be bun or elysia, got ${framework}`)
const port = Number(argValue(Bun.argv, ['--port']) ?? 0)
const events = argValue(Bun.argv, ['--events']) ?? 'pass'
if (events !== 'pass' && events !== 'relay') throw new Error(`--events must be pass or relay, got ${events}`)

interface Answer {
  status: number
  body: string
}

/** One keep-alive connection to the upstream, one exchange at a time. */
class Connection {
  private received: Buffer | null = null
  private waiting: { resolve: (answer: Answer) => void; reject: (error: Error) => void } | null = null
  socket: Socket | null = null
  closed = false

  send(request: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      if (this.closed || !this.socket) return reject(new Error('the upstream connection is closed'))
      this.waiting = { resolve, reject }
      this.socket.write(request)
    })
  }

  onData(data: Buffer): void {
    const received = (this.received = this.received ? Buffer.concat([this.received, data]) : data)
    const headEnd = received.indexOf('\r\n\r\n')
    if (headEnd < 0 || !this.waiting) return
    const head = received.toString('latin1', 0, headEnd)
    const length = /\r\ncontent-length: *(\d+)/i.exec(head)
    if (!length) return this.fail(new Error(`the upstream answered without Content-Length: ${head.slice(0, 200)}`))
    const bodyEnd = headEnd + 4 + Number(length[1])
    if (received.length < bodyEnd) return
    const answer = { status: Number(head.slice(9, 12)), body: received.toString('utf8', headEnd + 4, bodyEnd) }
    this.received = received.length > bodyEnd ? received.subarray(bodyEnd) : null
    const { resolve } = this.waiting
    this.waiting = null
    resolve(answer)
  }

  fail(error: Error): void {
    this.closed = true
    this.waiting?.reject(error)
    this.waiting = null
    this.socket?.end()
  }
}

/** Connections to the upstream: an idle one is reused, else one is opened (at most one per request in flight). */
class SocketClient {
  private readonly idle: Connection[] = []

  async post(body: string): Promise<Answer> {
    let connection = this.idle.pop()
    // One the upstream closed while it was idle is dropped.
    while (connection?.closed) connection = this.idle.pop()
    connection ??= await this.open()
    const request = `POST ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    const answer = await connection.send(request)
    if (!connection.closed) this.idle.push(connection)
    return answer
  }

  private async open(): Promise<Connection> {
    const connection = new Connection()
    connection.socket = await Bun.connect({
      hostname: target.hostname,
      port: Number(target.port),
      socket: {
        data: (_socket, data) => connection.onData(data),
        close: () => connection.fail(new Error('the upstream closed the connection')),
        error: (_socket, error) => connection.fail(error),
      },
    })
    return connection
  }
}

const sockets = new SocketClient()

/** The upstream's status and parsed JSON answer. */
async function forward(body: string): Promise<{ status: number; json: unknown }> {
  if (client === 'socket') {
    const answer = await sockets.post(body)
    return { status: answer.status, json: JSON.parse(answer.body) }
  }
  const answer = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  return { status: answer.status, json: await answer.json() }
}

const eventStreamHeaders = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }

/** A streamed answer: the upstream's body passed on, or its events parsed and written again (`--events`). */
async function forwardStream(body: string): Promise<Response> {
  const answer = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  if (events === 'pass' || !answer.body) return new Response(answer.body, { status: answer.status, headers: eventStreamHeaders })
  const model = (JSON.parse(body) as { model: string }).model
  const reader = answer.body.getReader()
  const decoder = new TextDecoder()
  let pending = ''
  const source: Bun.DirectUnderlyingSource<string> = {
    type: 'direct',
    async pull(controller) {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        pending += decoder.decode(value, { stream: true })
        const parts = pending.split('\n\n')
        pending = parts.pop()!
        let out = ''
        for (const part of parts) {
          const data = part.slice('data: '.length)
          if (data === '[DONE]') {
            out += 'data: [DONE]\n\n'
            continue
          }
          const chunk = JSON.parse(data) as { model: string }
          chunk.model = model
          out += `data: ${JSON.stringify(chunk)}\n\n`
        }
        if (out) {
          const written = controller.write(out)
          if (typeof written !== 'number') await written
        }
      }
      controller.close()
    },
  }
  return new Response(new ReadableStream(source as unknown as UnderlyingDefaultSource<string>), { status: answer.status, headers: eventStreamHeaders })
}

/** Serves with Bun.serve alone. */
function serveBare(): number {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port,
    async fetch(request) {
      const body = await request.text()
      if (client === 'fetch' && body.includes('"stream":true')) return forwardStream(body)
      const answer = await forward(body)
      return Response.json(answer.json, { status: answer.status })
    },
  })
  return server.port!
}

/** Serves through Elysia, hooked as the gateway's chat route is (see the head of this file). */
async function serveElysia(): Promise<number> {
  const { Elysia } = await import('elysia')
  const { ChatCompletionRequest } = await import('@nilegate/shared/schemas/chat')
  let counter = 0
  const app = new Elysia({ normalize: false })
    .onRequest(({ set }) => {
      set.headers['x-request-id'] = `req_${(++counter).toString(36)}`
    })
    .onError(({ error }) => ({ error: { message: String(error), type: 'server_error', param: null, code: null } }))
    .onAfterHandle({ as: 'global' }, () => {})
    .onParse(async ({ request }) => JSON.parse(await request.text()))
    .derive(async ({ request }) => ({ token: request.headers.get('authorization') }))
    .post(
      '/v1/chat/completions',
      async ({ body, set }) => {
        const answer = await forward(JSON.stringify(body))
        set.status = answer.status
        return answer.json
      },
      { body: ChatCompletionRequest },
    )
    .listen({ hostname: '127.0.0.1', port })
  return app.server!.port!
}

const listening = framework === 'elysia' ? await serveElysia() : serveBare()
console.log(`bare-proxy listening on http://127.0.0.1:${listening}/v1`)
