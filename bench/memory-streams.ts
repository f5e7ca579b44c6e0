// Holds N streamed chat requests open at once, for bench/memory.ts, which spawns it with
// BUN_CONFIG_MAX_HTTP_REQUESTS above N: without it fetch keeps all but 256 of them queued.
//
//   bun bench/memory-streams.ts --url BASE/chat/completions --keys FILE --body-file F --streams 1000 [--timeout 120]
//
// Sends them all at once, key after key, and reads each to its end. Prints `streams open: K of N`
// once every one has had its first bytes or failed, `still open: K` on SIGUSR1 (those with first
// bytes and no end yet), and at the end one line `MEMORY_STREAMS {json}` (StreamsOutcome).

import { parseArgs } from 'node:util'

/** What bench/memory.ts reads back from the last line. */
export interface StreamsOutcome {
  streams: number
  /** Streams that had their first bytes. */
  opened: number
  /** From sending the first request until every stream had its first bytes or had failed. */
  openedInMs: number
  /** Streams that answered 200 and ended with `data: [DONE]`. */
  completed: number
  /** The others, by reason: `status 429 rate_limit_exceeded`, `no [DONE] at the end`, a socket error. */
  failures: Record<string, number>
  /** The first failure's details, to read when something went wrong. */
  firstFailure: string | null
  elapsedMs: number
}

export const streamsResultPrefix = 'MEMORY_STREAMS '
const doneEvent = 'data: [DONE]'

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    strict: true,
    options: { url: { type: 'string' }, keys: { type: 'string' }, 'body-file': { type: 'string' }, streams: { type: 'string' }, timeout: { type: 'string' } },
  })
  if (!values.url || !values.keys || !values['body-file'] || !values.streams) throw new Error('--url, --keys, --body-file and --streams are required')
  const streams = Number(values.streams)
  const timeoutMs = Number(values.timeout ?? 120) * 1000
  const keys = (await Bun.file(values.keys).text()).split('\n').map((line) => line.trim()).filter(Boolean)
  const body = await Bun.file(values['body-file']).text()

  let opened = 0
  let settled = 0
  let ended = 0
  let completed = 0
  let openedInMs: number | null = null
  const failures: Record<string, number> = {}
  let firstFailure: string | null = null
  const startedAt = performance.now()
  const noteSettled = () => {
    if (++settled < streams || openedInMs !== null) return
    openedInMs = performance.now() - startedAt
    console.log(`streams open: ${opened} of ${streams} (first bytes of all within ${openedInMs.toFixed(0)} ms)`)
  }
  const fail = (reason: string, details: string) => {
    failures[reason] = (failures[reason] ?? 0) + 1
    firstFailure ??= details
  }
  process.on('SIGUSR1', () => console.log(`still open: ${opened - ended}`))

  const readStream = async (key: string) => {
    let hasFirstBytes = false
    try {
      const response = await fetch(values.url!, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        signal: AbortSignal.timeout(timeoutMs),
      })
      if (response.status !== 200) {
        const text = await response.text()
        const code = text.match(/"code":"([^"]+)"/)?.[1]
        return fail(`status ${response.status}${code ? ` ${code}` : ''}`, `status ${response.status}: ${text.slice(0, 300)}`)
      }
      const reader = response.body!.getReader()
      const decoder = new TextDecoder()
      // Only the end matters: whether the last event is [DONE].
      let tail = ''
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        if (!hasFirstBytes) {
          hasFirstBytes = true
          opened++
          noteSettled()
        }
        tail = (tail + decoder.decode(value, { stream: true })).slice(-256)
      }
      if (tail.trimEnd().endsWith(doneEvent)) completed++
      else fail(`no [DONE] at the end`, `a stream ended with: ${JSON.stringify(tail.slice(-200))}`)
    } catch (error) {
      const reason = (error as Error).name === 'TimeoutError' ? 'timeout' : ((error as { code?: string }).code ?? (error as Error).message)
      fail(reason, `${hasFirstBytes ? 'after' : 'before'} the first bytes: ${(error as Error).message}`)
    } finally {
      if (hasFirstBytes) ended++
      else noteSettled()
    }
  }
  await Promise.all(Array.from({ length: streams }, (_, index) => readStream(keys[index % keys.length]!)))

  const outcome: StreamsOutcome = { streams, opened, openedInMs: openedInMs ?? performance.now() - startedAt, completed, failures, firstFailure, elapsedMs: performance.now() - startedAt }
  console.log(streamsResultPrefix + JSON.stringify(outcome))
}

if (import.meta.main) {
  await main()
  process.exit(0)
}
