import type { LoadReport } from './load-stats'

/**
 * What one load run measured, as the runners compare it: wrk prints it as one line `BENCH_RESULT
 * <json>` (bench/post.lua); the Bun load tester's JSON is turned into it by `loadResultOf`.
 */
export interface LoadResult {
  requests: number
  duration_us: number
  bytes: number
  errors: {
    connect: number
    read: number
    write: number
    /** Failed answers: >= 400 for wrk; non-2xx and error events in streams for the Bun load tester. */
    status: number
    timeout: number
  }
  latency_us: { p50: number; p90: number; p99: number; max: number; mean: number }
  /** CPU time the load tool used for the run (user and system, all its threads), when known: set by `runLoadTool`. */
  tool_cpu_us?: number
}

export const RESULT_PREFIX = 'BENCH_RESULT '

/** The Bun load tester's report in the runners' terms (latency of its successful requests). */
export function loadResultOf(report: LoadReport): LoadResult {
  const { transport } = report.errors
  const timeout = transport.timeout ?? 0
  const connect = transport.ECONNREFUSED ?? 0
  const noAnswer = Object.values(transport).reduce((sum, count) => sum + count, 0)
  const us = (ms: number | undefined) => Math.round((ms ?? 0) * 1000)
  return {
    requests: report.requests.answered,
    duration_us: Math.round(report.elapsed_s * 1e6),
    bytes: report.bytes,
    errors: { connect, read: noAnswer - timeout - connect + report.requests.unfinished, write: 0, status: report.requests.answered - report.requests.ok, timeout },
    latency_us: {
      p50: us(report.latency_ms?.p50),
      p90: us(report.latency_ms?.p90),
      p99: us(report.latency_ms?.p99),
      max: us(report.latency_ms?.max),
      mean: Math.round((report.latency_ms?.mean ?? 0) * 10_000) / 10,
    },
  }
}

/** Finds the BENCH_RESULT line in wrk's output. */
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
