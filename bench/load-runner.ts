import { readAnswer } from './load-answer'
import type { LoadOptions } from './load-options'
import { LoadStats, summarize, type LoadReport } from './load-stats'

/** Open loop: a request sent later than this after its time counts as late. */
export const LATE_AFTER_MS = 10
/** Time the run gives itself after the last request's timeout before it stops waiting. */
const HARD_STOP_GRACE_MS = 1_000

/** Called about once a second while the run lasts. */
export type ProgressListener = (stats: LoadStats, elapsedMs: number) => void

function transportKind(error: unknown): string {
  const { name, code } = error as { name?: string; code?: unknown }
  if (name === 'TimeoutError') return 'timeout'
  return typeof code === 'string' && code !== '' ? code : (name ?? 'error')
}

/**
 * Sends requests until --duration has passed or --requests were sent, in a closed loop (each of
 * --concurrency workers sends again when answered) or an open one (--rps arrivals a second, dropped
 * when --concurrency requests are in flight), then waits for the answers in flight, each within its
 * timeout. Whatever the server does, it returns by duration + timeout + a second.
 */
export async function runLoad(options: LoadOptions, onProgress?: ProgressListener): Promise<LoadReport> {
  const headerSets = (options.keys.length > 0 ? options.keys : [null]).map((key) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (key) headers.authorization = `Bearer ${key}`
    return headers
  })
  const stats = new LoadStats()
  let keyTurn = 0
  let inFlight = 0
  const startedAt = new Date()
  const started = performance.now()
  const deadline = started + options.durationMs
  let lastAnswerAt = started
  let endedBy: LoadReport['ended_by'] = 'duration'

  const mayStart = () => {
    if (options.maxRequests !== null && stats.sent >= options.maxRequests) {
      endedBy = 'requests'
      return false
    }
    return performance.now() < deadline
  }

  /** One request to its last byte; false when the connection failed at once (refused), so a loop does not spin. */
  const send = async (): Promise<boolean> => {
    const headers = headerSets[keyTurn++ % headerSets.length]!
    stats.sent++
    inFlight++
    const sentAt = performance.now()
    try {
      const response = await fetch(options.url, { method: 'POST', body: options.body, headers, signal: AbortSignal.timeout(options.timeoutMs) })
      const answer = await readAnswer(response, sentAt, options.isStream)
      stats.recordAnswer(answer, performance.now() - sentAt)
      return true
    } catch (error) {
      const kind = transportKind(error)
      stats.recordTransportError(kind)
      return kind === 'timeout'
    } finally {
      inFlight--
      lastAnswerAt = performance.now()
    }
  }

  const closedLoopWorker = async () => {
    while (mayStart()) {
      if (!(await send())) await Bun.sleep(1)
    }
  }

  const pending = new Set<Promise<boolean>>()
  const openLoop = async (rps: number) => {
    const intervalMs = 1000 / rps
    let arrival = 0
    while (mayStart()) {
      const now = performance.now()
      for (let due = started + arrival * intervalMs; due <= now && mayStart(); due = started + ++arrival * intervalMs) {
        if (inFlight >= options.concurrency) {
          stats.dropped++
          continue
        }
        const lagMs = now - due
        stats.sendLags.push(lagMs)
        if (lagMs > LATE_AFTER_MS) stats.late++
        const request = send()
        pending.add(request)
        void request.finally(() => pending.delete(request))
      }
      await Bun.sleep(Math.max(0, started + arrival * intervalMs - performance.now()))
    }
    await Promise.all(pending)
  }

  const ticker = onProgress ? setInterval(() => onProgress(stats, performance.now() - started), 1_000) : null
  const load = options.rps === null ? Promise.all(Array.from({ length: options.concurrency }, closedLoopWorker)) : openLoop(options.rps)
  let hardStopTimer: Timer | undefined
  const hardStop = new Promise<'hard stop'>((resolve) => {
    hardStopTimer = setTimeout(() => resolve('hard stop'), options.durationMs + options.timeoutMs + HARD_STOP_GRACE_MS)
  })
  const ending = await Promise.race([load.then(() => 'done' as const), hardStop])
  clearTimeout(hardStopTimer)
  if (ticker) clearInterval(ticker)
  if (ending === 'hard stop') endedBy = 'hard stop'
  const endedAt = ending === 'hard stop' ? performance.now() : lastAnswerAt

  return summarize(stats, {
    target: {
      url: options.url,
      model: options.model,
      endpoint: options.isEmbeddings ? 'embeddings' : 'chat/completions',
      stream: options.isStream,
      max_tokens: options.maxTokens,
      api_keys: options.keys.length,
    },
    load: {
      loop: options.rps === null ? 'closed' : 'open',
      concurrency: options.concurrency,
      rps: options.rps,
      duration_s: options.durationMs / 1000,
      requests_limit: options.maxRequests,
      timeout_s: options.timeoutMs / 1000,
    },
    startedAt,
    elapsedMs: endedAt - started,
    endedBy,
    unfinished: ending === 'hard stop' ? inFlight : 0,
    lateAfterMs: options.rps === null ? null : LATE_AFTER_MS,
  })
}
