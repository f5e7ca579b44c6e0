// A closed-loop HTTP load generator on Bun, used when wrk is not installed: N workers, each with its
// own keep-alive connection, POST the same body in a loop for D seconds.
//
//   bun bench/load.ts --url URL --body-file FILE [--keys-file FILE] [-c 50] [-d 10]
//
// Prints a readable summary, then `BENCH_RESULT <json>` (the same line bench/post.lua makes wrk print).

import { percentile } from './percentile'
import { RESULT_PREFIX, type LoadResult } from './load-result'
import { argValue } from './arg-value'

export interface LoadOptions {
  url: string
  body: string
  /** API keys to rotate over (Authorization: Bearer); none sends no Authorization. */
  keys: string[]
  connections: number
  durationMs: number
  /** A request that takes longer counts as a timeout and is abandoned. */
  timeoutMs?: number
}

/** Runs the load and measures every request from send to the last byte of the answer. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const headerSets = (options.keys.length > 0 ? options.keys : [null]).map((key) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (key) headers.authorization = `Bearer ${key}`
    return headers
  })
  const timeoutMs = options.timeoutMs ?? 2_000
  const errors = { connect: 0, read: 0, write: 0, status: 0, timeout: 0 }
  let latencies = new Float64Array(1 << 16)
  let count = 0
  let bytes = 0

  const record = (latencyMs: number) => {
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2)
      grown.set(latencies)
      latencies = grown
    }
    latencies[count++] = latencyMs
  }

  const started = performance.now()
  const deadline = started + options.durationMs

  async function worker(offset: number) {
    let turn = offset
    while (performance.now() < deadline) {
      const headers = headerSets[turn++ % headerSets.length]!
      const sentAt = performance.now()
      try {
        const response = await fetch(options.url, {
          method: 'POST',
          body: options.body,
          headers,
          signal: AbortSignal.timeout(timeoutMs),
        })
        const answer = await response.arrayBuffer()
        bytes += answer.byteLength
        if (response.status < 200 || response.status > 299) errors.status++
        record(performance.now() - sentAt)
      } catch (error) {
        const name = (error as Error).name
        if (name === 'TimeoutError' || name === 'AbortError') errors.timeout++
        else if ((error as { code?: string }).code === 'ECONNREFUSED') errors.connect++
        else errors.read++
        // A refused connection fails at once; do not spin on it.
        await Bun.sleep(1)
      }
    }
  }

  await Promise.all(Array.from({ length: options.connections }, (_, index) => worker(index)))
  const elapsedMs = performance.now() - started
  const sorted = latencies.subarray(0, count).sort()
  let sum = 0
  for (const value of sorted) sum += value
  const us = (ms: number) => (Number.isNaN(ms) ? 0 : Math.round(ms * 1000))
  return {
    requests: count,
    duration_us: Math.round(elapsedMs * 1000),
    bytes,
    errors,
    latency_us: {
      p50: us(percentile(sorted, 50)),
      p90: us(percentile(sorted, 90)),
      p99: us(percentile(sorted, 99)),
      max: us(count > 0 ? sorted[count - 1]! : Number.NaN),
      mean: count > 0 ? Math.round((sum / count) * 10_000) / 10 : 0,
    },
  }
}


if (import.meta.main) {
  const args = Bun.argv.slice(2)
  const url = argValue(args, ['--url'])
  const bodyFile = argValue(args, ['--body-file'])
  if (!url || !bodyFile) {
    console.error('usage: bun bench/load.ts --url URL --body-file FILE [--keys-file FILE] [-c 50] [-d 10]')
    process.exit(2)
  }
  const keysFile = argValue(args, ['--keys-file'])
  const keys = keysFile ? (await Bun.file(keysFile).text()).split(/\r?\n/).filter(Boolean) : []
  const connections = Number(argValue(args, ['-c', '--connections']) ?? 50)
  const durationS = Number(argValue(args, ['-d', '--duration']) ?? 10)
  const result = await runLoad({ url, body: await Bun.file(bodyFile).text(), keys, connections, durationMs: durationS * 1000 })
  const rps = result.requests / (result.duration_us / 1e6)
  console.log(
    `bun load: ${result.requests} requests in ${(result.duration_us / 1e6).toFixed(2)} s, ${rps.toFixed(0)} req/s, ` +
      `p50 ${(result.latency_us.p50 / 1000).toFixed(2)} ms, p99 ${(result.latency_us.p99 / 1000).toFixed(2)} ms, ` +
      `non-2xx ${result.errors.status}, failed ${result.errors.connect + result.errors.read + result.errors.timeout}`,
  )
  console.log(RESULT_PREFIX + JSON.stringify(result))
}
