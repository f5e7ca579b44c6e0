/**
 * What one load run measured, as both load tools print it: one line `BENCH_RESULT <json>` on stdout
 * (bench/post.lua for wrk, bench/load.ts for the Bun generator).
 */
export interface LoadResult {
  requests: number
  duration_us: number
  bytes: number
  errors: {
    connect: number
    read: number
    write: number
    /** Answers with a failing status: non-2xx for the Bun generator, >= 400 for wrk. */
    status: number
    timeout: number
  }
  latency_us: { p50: number; p90: number; p99: number; max: number; mean: number }
  /** CPU time the load tool used for the run (user and system, all its threads), when known: set by `runLoadTool`. */
  tool_cpu_us?: number
}

export const RESULT_PREFIX = 'BENCH_RESULT '

/** Finds the BENCH_RESULT line in a load tool's output. */
export function parseLoadResult(output: string): LoadResult {
  const line = output.split('\n').find((candidate) => candidate.startsWith(RESULT_PREFIX))
  if (!line) throw new Error(`the load tool printed no ${RESULT_PREFIX.trim()} line:\n${output.slice(-2000)}`)
  return JSON.parse(line.slice(RESULT_PREFIX.length)) as LoadResult
}

export function totalErrors(result: LoadResult): number {
  const { connect, read, write, status, timeout } = result.errors
  return connect + read + write + status + timeout
}

export function requestsPerSecond(result: LoadResult): number {
  return result.duration_us > 0 ? result.requests / (result.duration_us / 1e6) : 0
}
