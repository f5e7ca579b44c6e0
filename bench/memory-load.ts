// The mixed load of bench/memory.ts: chat, streamed chat, embeddings and requests that fail, at
// once, each kind from its own bench/load.ts in an open loop at its share of the rate.

import { join } from 'node:path'
import type { RunningGateway } from './gateway-process'
import type { LoadReport } from './load-stats'
import type { KindMinute } from './memory-report'
import type { ProcessGroup } from './process-group'
import { chatBody } from './run'
import { streamedChatBody } from './ttfb'

/** One kind of request of the mixed load: its share of the rate, what it sends and the status it must get. */
export interface LoadKind {
  name: string
  share: number
  path: 'chat/completions' | 'embeddings'
  body: string
  isMadeUpKey: boolean
  expectedStatus: number
}

/** Bounds each kind's requests in flight; past it arrivals are dropped (and counted). */
export const loadConcurrency = 256
const madeUpKey = `sk-bench-made-up-${'0'.repeat(32)}`

/** The kinds and their shares; `embeddingsModel` is a catalog model of modality embeddings. */
export function mixedLoadKinds(chatModel: string, embeddingsModel: string): LoadKind[] {
  return [
    { name: 'chat', share: 0.35, path: 'chat/completions', body: chatBody(chatModel), isMadeUpKey: false, expectedStatus: 200 },
    { name: 'streamed', share: 0.35, path: 'chat/completions', body: streamedChatBody(chatModel), isMadeUpKey: false, expectedStatus: 200 },
    { name: 'embeddings', share: 0.2, path: 'embeddings', body: JSON.stringify({ model: embeddingsModel, input: 'Say something short.' }), isMadeUpKey: false, expectedStatus: 200 },
    { name: 'unknown key (401)', share: 0.05, path: 'chat/completions', body: chatBody(chatModel), isMadeUpKey: true, expectedStatus: 401 },
    { name: 'bad body (400)', share: 0.05, path: 'chat/completions', body: JSON.stringify({ model: chatModel, max_tokens: 16, messages: 'not a list' }), isMadeUpKey: false, expectedStatus: 400 },
  ]
}

/** One request of each kind, answered with its status, or why not: before minutes of load that would only count errors. */
async function checkKinds(kinds: LoadKind[], gateway: RunningGateway): Promise<void> {
  for (const kind of kinds) {
    const response = await fetch(`${gateway.baseUrl}/${kind.path}`, {
      method: 'POST',
      body: kind.body,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${kind.isMadeUpKey ? madeUpKey : gateway.keys[0]}` },
      signal: AbortSignal.timeout(10_000),
    })
    const text = await response.text()
    if (response.status !== kind.expectedStatus) throw new Error(`${kind.name}: expected ${kind.expectedStatus}, got ${response.status}: ${text.slice(0, 300)}`)
  }
}

function kindMinuteOf(kind: LoadKind, report: LoadReport): KindMinute {
  const { requests, errors } = report
  const expected = kind.expectedStatus === 200 ? requests.ok : (errors.by_status[String(kind.expectedStatus)] ?? 0)
  const unexpected: Record<string, number> = {}
  for (const [status, count] of Object.entries(errors.by_status)) if (Number(status) !== kind.expectedStatus) unexpected[`status ${status}`] = count
  for (const [reason, count] of Object.entries(errors.transport)) unexpected[reason] = count
  if (errors.in_stream > 0) unexpected['error event in a stream'] = errors.in_stream
  if (requests.unfinished > 0) unexpected.unfinished = requests.unfinished
  return { sent: requests.sent, expected, dropped: requests.dropped, unexpected }
}

export interface MixedLoad {
  kinds: LoadKind[]
  /** A minute of every kind at once; what each got, by kind name. */
  runMinute(minute: number): Promise<Record<string, KindMinute>>
}

/** Writes the bodies, checks that one request of each kind gets its status, and returns the load at `rps` requests a second in all. */
export async function prepareMixedLoad(kinds: LoadKind[], gateway: RunningGateway, rps: number, processes: ProcessGroup, workDir: string): Promise<MixedLoad> {
  const bodyFiles = kinds.map((_, index) => join(workDir, `body-load-${index}.json`))
  for (const [index, kind] of kinds.entries()) await Bun.write(bodyFiles[index]!, kind.body)
  await checkKinds(kinds, gateway)
  return {
    kinds,
    async runMinute(minute) {
      const runs = kinds.map(async (kind, index) => {
        const logPath = join(workDir, `load-${minute}-${index}.log`)
        const jsonPath = `${logPath}.json`
        const cmd = ['bun', join(import.meta.dir, 'load.ts'), '--url', `${gateway.baseUrl}/${kind.path}`, '--body-file', bodyFiles[index]!,
          ...(kind.isMadeUpKey ? ['--api-key', madeUpKey] : ['--keys', gateway.keysFile]), '--rps', String(rps * kind.share),
          '--concurrency', String(loadConcurrency), '--duration', '60', '--timeout', '10', '--quiet', '--json', jsonPath]
        const child = processes.spawn(cmd, { env: { ...Bun.env } as Record<string, string>, logPath })
        const exitCode = await child.exited
        if (exitCode !== 0) throw new Error(`bench/load.ts (${kind.name}) exited with ${exitCode}:\n${(await Bun.file(logPath).text()).slice(-2000)}`)
        return [kind.name, kindMinuteOf(kind, (await Bun.file(jsonPath).json()) as LoadReport)] as const
      })
      return Object.fromEntries(await Promise.all(runs))
    },
  }
}
