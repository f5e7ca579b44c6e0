// The least a proxy in front of the fake upstream can do on Bun: read the body, POST it upstream
// with fetch, parse the JSON answer and send it back. No authentication, limits, billing or
// validation: the bench's reference for what the gateway's own work costs on top.
//
//   bun bench/bare-proxy.ts --upstream http://127.0.0.1:PORT/v1 [--port 0]
//
// Prints `bare-proxy listening on http://127.0.0.1:PORT/v1` once it accepts connections.
import { argValue } from './arg-value'

const upstream = argValue(Bun.argv, ['--upstream'])
if (!upstream) throw new Error('--upstream URL is required')
const target = `${upstream}/chat/completions`

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(argValue(Bun.argv, ['--port']) ?? 0),
  async fetch(request) {
    const answer = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await request.text() })
    return Response.json(await answer.json(), { status: answer.status })
  },
})
console.log(`bare-proxy listening on http://127.0.0.1:${server.port}/v1`)
