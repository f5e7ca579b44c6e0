import type { Answer } from './load-answer'
import { percentile } from './percentile'

/** Milliseconds, nearest-rank percentiles. */
export interface Percentiles {
  p50: number
  p90: number
  p99: number
  max: number
  mean: number
}

/** What one run measured: what `bun bench/load.ts --json` writes. */
export interface LoadReport {
  target: { url: string; model: string; endpoint: 'chat/completions' | 'embeddings'; stream: boolean; max_tokens: number | null; api_keys: number }
  load: { loop: 'closed' | 'open'; concurrency: number; rps: number | null; duration_s: number; requests_limit: number | null; timeout_s: number }
  started_at: string
  /** From the first request to the last answer (or the hard stop). */
  elapsed_s: number
  ended_by: 'duration' | 'requests' | 'hard stop'
  requests: {
    sent: number
    /** Answered to the last byte, whatever the status. */
    answered: number
    ok: number
    failed: number
    /** Open loop: arrivals that found --concurrency requests in flight and were not sent. */
    dropped: number
    /** Open loop: sent more than `late_after_ms` after their time. */
    late: number
    /** Still in flight at the hard stop. */
    unfinished: number
  }
  requests_per_s: number
  ok_per_s: number
  /** Of successful requests, from sending to the last byte. */
  latency_ms: Percentiles | null
  /** Streams: from sending to the first event carrying generated text. */
  ttft_ms: Percentiles | null
  /** Open loop: how long after its time each request went out. */
  send_lag_ms: Percentiles | null
  late_after_ms: number | null
  tokens: {
    output: number
    output_per_s: number
    prompt: number
    prompt_per_s: number
    /** Answers whose output tokens came from `usage`, and streams without usage whose text events were counted instead. */
    counted_from: { usage: number; chunks: number }
  }
  errors: {
    total: number
    /** Answers outside 2xx, by status. */
    by_status: Record<string, number>
    /** Failed answers (statuses and error events in streams) by the OpenAI envelope's `error.code`. */
    by_code: Record<string, number>
    /** Error events inside 200 streams. */
    in_stream: number
    /** No answer: `timeout`, or the socket error's code (ECONNREFUSED, ECONNRESET, ...). */
    transport: Record<string, number>
  }
  bytes: number
}

/** A growable list of numbers that can be sorted without copying into a JS array. */
class Samples {
  private values = new Float64Array(1 << 12)
  length = 0

  push(value: number): void {
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2)
      grown.set(this.values)
      this.values = grown
    }
    this.values[this.length++] = value
  }

  /** Percentiles of the samples from `from` on; null when there are none. */
  percentiles(from = 0): Percentiles | null {
    const count = this.length - from
    if (count <= 0) return null
    const sorted = this.values.slice(from, this.length).sort()
    let sum = 0
    for (const value of sorted) sum += value
    const round = (ms: number) => Math.round(ms * 1000) / 1000
    return {
      p50: round(percentile(sorted, 50)),
      p90: round(percentile(sorted, 90)),
      p99: round(percentile(sorted, 99)),
      max: round(sorted[count - 1]!),
      mean: round(sum / count),
    }
  }
}

const increment = (counts: Record<string, number>, key: string) => {
  counts[key] = (counts[key] ?? 0) + 1
}

/** The running tally of one load run. */
export class LoadStats {
  sent = 0
  answered = 0
  ok = 0
  dropped = 0
  late = 0
  bytes = 0
  outputTokens = 0
  promptTokens = 0
  fromUsage = 0
  fromChunks = 0
  inStream = 0
  transportErrors = 0
  readonly byStatus: Record<string, number> = {}
  readonly byCode: Record<string, number> = {}
  readonly transport: Record<string, number> = {}
  readonly latencies = new Samples()
  readonly ttfts = new Samples()
  readonly sendLags = new Samples()

  get failed(): number {
    return this.answered - this.ok + this.transportErrors
  }

  recordAnswer(answer: Answer, latencyMs: number): void {
    this.answered++
    this.bytes += answer.bytes
    if (answer.status < 200 || answer.status > 299) increment(this.byStatus, String(answer.status))
    if (answer.isErrorInStream) this.inStream++
    if (!answer.isOk) {
      increment(this.byCode, answer.errorCode ?? '(no code)')
      return
    }
    this.ok++
    this.latencies.push(latencyMs)
    if (answer.ttftMs !== null) this.ttfts.push(answer.ttftMs)
    if (answer.outputTokens !== null) {
      this.outputTokens += answer.outputTokens
      if (answer.isCountedFromUsage) this.fromUsage++
      else this.fromChunks++
    }
    if (answer.promptTokens !== null) this.promptTokens += answer.promptTokens
  }

  recordTransportError(kind: string): void {
    this.transportErrors++
    increment(this.transport, kind)
  }
}

/** The report of a finished (or hard-stopped) run. */
export function summarize(
  stats: LoadStats,
  run: { target: LoadReport['target']; load: LoadReport['load']; startedAt: Date; elapsedMs: number; endedBy: LoadReport['ended_by']; unfinished: number; lateAfterMs: number | null },
): LoadReport {
  const elapsedS = run.elapsedMs / 1000
  const perSecond = (count: number) => (elapsedS > 0 ? Math.round((count / elapsedS) * 100) / 100 : 0)
  return {
    target: run.target,
    load: run.load,
    started_at: run.startedAt.toISOString(),
    elapsed_s: Math.round(elapsedS * 1000) / 1000,
    ended_by: run.endedBy,
    requests: { sent: stats.sent, answered: stats.answered, ok: stats.ok, failed: stats.failed + run.unfinished, dropped: stats.dropped, late: stats.late, unfinished: run.unfinished },
    requests_per_s: perSecond(stats.answered),
    ok_per_s: perSecond(stats.ok),
    latency_ms: stats.latencies.percentiles(),
    ttft_ms: stats.ttfts.percentiles(),
    send_lag_ms: run.load.loop === 'open' ? stats.sendLags.percentiles() : null,
    late_after_ms: run.lateAfterMs,
    tokens: { output: stats.outputTokens, output_per_s: perSecond(stats.outputTokens), prompt: stats.promptTokens, prompt_per_s: perSecond(stats.promptTokens), counted_from: { usage: stats.fromUsage, chunks: stats.fromChunks } },
    errors: { total: stats.failed + run.unfinished, by_status: stats.byStatus, by_code: stats.byCode, in_stream: stats.inStream, transport: stats.transport },
    bytes: stats.bytes,
  }
}
