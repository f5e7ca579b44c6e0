import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { LoadReport } from '../../bench/load-stats'
import { useGateway } from '../support/gateway-process'
import { childEnv, runBun } from '../support/processes'

const model = 'nile/llama-3.3-70b-instruct'
const progressLine = /^\d+\.\d s {2}\d+ answered {2}[\d.]+ req\/s {2}\d+ errors \(\d+ new\) {2}p50 /m
const workDir = mkdtempSync(join(tmpdir(), 'nilegate-load-test-'))
afterAll(() => rmSync(workDir, { recursive: true, force: true }))

/** Runs `bun bench/load.ts <args> --json -` to its end (killed after a minute) and reads its JSON. */
async function load(args: string[]): Promise<{ report: LoadReport; stderr: string; wallMs: number }> {
  const startedAt = performance.now()
  const { code, stdout, stderr } = await runBun(['bench/load.ts', ...args, '--json', '-'], childEnv(), 60_000)
  const wallMs = performance.now() - startedAt
  if (code !== 0) throw new Error(`bench/load.ts exited with ${code}:\n${stdout}\n${stderr}`)
  return { report: JSON.parse(stdout) as LoadReport, stderr, wallMs }
}

function isAscending(values: { p50: number; p90: number; p99: number; max: number } | null): boolean {
  return values !== null && values.p50 > 0 && values.p50 <= values.p90 && values.p90 <= values.p99 && values.p99 <= values.max
}

describe('bench/load.ts against a gateway on the simulator', () => {
  const gateway = useGateway({ database: 'pglite' })

  test('holds an open loop near --rps for --duration and reports every figure', async () => {
    const key = await gateway.current.createApiKey({ rpm: 1_000_000 })

    // 40 a second stays under the edge's 100 a second for one key.
    const { report, stderr } = await load(['--base-url', gateway.current.baseUrl, '--api-key', key, '--model', model, '--rps', '40', '--duration', '2', '--concurrency', '8'])

    expect(report.load).toEqual({ loop: 'open', concurrency: 8, rps: 40, duration_s: 2, requests_limit: null, timeout_s: 60 })
    expect(report.ended_by).toBe('duration')
    expect(report.requests.sent + report.requests.dropped).toBeLessThanOrEqual(80)
    expect(report.requests.sent).toBeGreaterThanOrEqual(50)
    expect(report.requests.answered).toBe(report.requests.sent)
    expect(report.requests.ok).toBe(report.requests.sent)
    expect(report.errors).toEqual({ total: 0, by_status: {}, by_code: {}, in_stream: 0, transport: {} })
    expect(report.requests_per_s).toBeGreaterThan(20)
    expect(report.requests_per_s).toBeLessThan(45)
    expect(isAscending(report.latency_ms)).toBe(true)
    expect(report.send_lag_ms!.max).toBeGreaterThanOrEqual(report.send_lag_ms!.p50)
    expect(report.ttft_ms).toBeNull()
    expect(report.tokens.output).toBe(report.requests.ok * 16)
    expect(report.tokens.counted_from).toEqual({ usage: report.requests.ok, chunks: 0 })
    expect(report.tokens.output_per_s).toBeGreaterThan(0)
    expect(stderr).toMatch(progressLine)
    expect(stderr).toContain('latency ms')
  })

  test('stops at --requests, and gives a time to first token for streams', async () => {
    const key = await gateway.current.createApiKey({ rpm: 1_000_000 })

    const { report } = await load(['--base-url', gateway.current.baseUrl, '--api-key', key, '--model', model, '--stream', '--requests', '20', '--concurrency', '2', '--duration', '30'])

    expect(report.ended_by).toBe('requests')
    expect(report.requests).toEqual({ sent: 20, answered: 20, ok: 20, failed: 0, dropped: 0, late: 0, unfinished: 0 })
    expect(report.target.stream).toBe(true)
    expect(isAscending(report.ttft_ms)).toBe(true)
    expect(report.ttft_ms!.p50).toBeLessThanOrEqual(report.latency_ms!.p50)
    expect(report.tokens.output).toBe(20 * 16)
    expect(report.tokens.counted_from).toEqual({ usage: 20, chunks: 0 })
  })

  test('takes --keys in turn and counts a wrong key as 401 invalid_api_key', async () => {
    const keysFile = join(workDir, 'keys.txt')
    await Bun.write(keysFile, `${await gateway.current.createApiKey({ rpm: 1_000_000 })}\nsk-${'x'.repeat(40)}\n`)

    const { report } = await load(['--base-url', gateway.current.baseUrl, '--keys', keysFile, '--model', model, '--requests', '10', '--concurrency', '1'])

    expect(report.target.api_keys).toBe(2)
    expect(report.requests).toMatchObject({ sent: 10, answered: 10, ok: 5, failed: 5 })
    expect(report.errors).toEqual({ total: 5, by_status: { '401': 5 }, by_code: { invalid_api_key: 5 }, in_stream: 0, transport: {} })
    expect(report.tokens.output).toBe(5 * 16)
  })
})

/** A server speaking just enough of the protocol to misbehave on purpose, chosen by the model asked for. */
function startMisbehavingServer() {
  const encoder = new TextEncoder()
  const event = (data: unknown) => encoder.encode(`data: ${JSON.stringify(data)}\n\n`)
  const chunk = (delta: Record<string, string>) => ({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] })
  const sse = (body: ReadableStream) => new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const { model } = (await request.json()) as { model: string }
      if (model === 'no-usage') {
        // The role at once, the first text 50 ms later, no usage chunk.
        return sse(
          new ReadableStream({
            async start(controller) {
              controller.enqueue(event(chunk({ role: 'assistant', content: '' })))
              await Bun.sleep(50)
              for (const text of ['one', ' two', ' three']) controller.enqueue(event(chunk({ content: text })))
              controller.enqueue(encoder.encode('data: [DONE]\n\n'))
              controller.close()
            },
          }),
        )
      }
      if (model === 'fails-midway') {
        const error = { error: { type: 'service_unavailable', message: 'The upstream went away.', code: 'upstream_error', param: null } }
        return sse(
          new ReadableStream({
            start(controller) {
              controller.enqueue(event(chunk({ content: 'a' })))
              controller.enqueue(event(error))
              controller.enqueue(encoder.encode('data: [DONE]\n\n'))
              controller.close()
            },
          }),
        )
      }
      // A stream that starts and never ends.
      return sse(new ReadableStream({ start: (controller) => controller.enqueue(event(chunk({ role: 'assistant', content: '' }))) }))
    },
  })
}

describe('bench/load.ts against servers that misbehave', () => {
  const server = startMisbehavingServer()
  afterAll(() => server.stop(true))
  const baseUrl = `http://127.0.0.1:${server.port}/v1`

  test('counts the text events of streams without usage, and times the first token, not the first byte', async () => {
    const { report } = await load(['--base-url', baseUrl, '--model', 'no-usage', '--stream', '--requests', '6', '--concurrency', '2'])

    expect(report.requests.ok).toBe(6)
    expect(report.tokens.output).toBe(6 * 3)
    expect(report.tokens.counted_from).toEqual({ usage: 0, chunks: 6 })
    expect(report.ttft_ms!.p50).toBeGreaterThanOrEqual(45)
  })

  test('counts an error event inside a 200 stream by its code', async () => {
    const { report } = await load(['--base-url', baseUrl, '--model', 'fails-midway', '--stream', '--requests', '4', '--concurrency', '2'])

    expect(report.requests).toMatchObject({ answered: 4, ok: 0, failed: 4 })
    expect(report.errors).toEqual({ total: 4, by_status: {}, by_code: { upstream_error: 4 }, in_stream: 4, transport: {} })
  })

  test('ends within duration and timeout when a stream never ends', async () => {
    const { report, wallMs } = await load(['--base-url', baseUrl, '--model', 'hangs', '--stream', '--duration', '1', '--timeout', '1', '--concurrency', '3'])

    expect(report.requests).toMatchObject({ sent: 3, answered: 0, ok: 0, failed: 3 })
    expect(report.errors.transport).toEqual({ timeout: 3 })
    expect(report.elapsed_s).toBeLessThan(2.5)
    // Bun's start and a busy machine on top of duration + timeout.
    expect(wallMs).toBeLessThan(8_000)
  })

  test('ends within duration and timeout when a server accepts connections and never answers', async () => {
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const { report, wallMs } = await load(['--base-url', `http://127.0.0.1:${silent.port}/v1`, '--model', 'any', '--duration', '1', '--timeout', '1', '--concurrency', '3'])

      expect(report.requests).toMatchObject({ sent: 3, answered: 0, failed: 3 })
      expect(report.errors.transport).toEqual({ timeout: 3 })
      expect(report.latency_ms).toBeNull()
      expect(wallMs).toBeLessThan(8_000)
    } finally {
      silent.stop(true)
    }
  })
})
