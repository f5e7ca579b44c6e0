// Time to first byte of streamed chat completions: sequential requests, one at a time, measuring
// from send to the first body chunk (the first SSE event) and to the end of the stream.
// Several targets are measured in turns (a, b, a, b, ...) so that noise on the machine hits all alike.
//
//   bun bench/ttfb.ts --url URL --model MODEL [--key KEY] [-n 200] [--warmup 20]

import { percentile } from './percentile'
import { argValue } from './arg-value'

export interface TtfbTarget {
  name: string
  url: string
  body: string
  /** API keys taken in turn, so that back-to-back requests stay under a per-key rate limit. */
  keys?: string[]
}

export interface TtfbResult {
  name: string
  samples: number
  errors: number
  /** The first problem seen, to tell why errors happened. */
  firstError: string | null
  ttfbMs: { p50: number; p90: number }
  totalMs: { p50: number; p90: number }
}

interface Sample {
  ttfbMs: number
  totalMs: number
}

async function measureOnce(target: TtfbTarget, round: number): Promise<Sample> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  const key = target.keys?.length ? target.keys[round % target.keys.length] : undefined
  if (key) headers.authorization = `Bearer ${key}`
  const sentAt = performance.now()
  const response = await fetch(target.url, { method: 'POST', body: target.body, headers, signal: AbortSignal.timeout(10_000) })
  if (response.status !== 200 || !response.body) {
    throw new Error(`status ${response.status}: ${(await response.text()).slice(0, 300)}`)
  }
  const reader = response.body.getReader()
  const first = await reader.read()
  const firstAt = performance.now()
  const decoder = new TextDecoder()
  let text = first.value ? decoder.decode(first.value, { stream: true }) : ''
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    text += decoder.decode(chunk.value, { stream: true })
  }
  const doneAt = performance.now()
  if (!text.startsWith('data: ') || !text.endsWith('data: [DONE]\n\n')) {
    throw new Error(`not an SSE stream ending in [DONE]: ${text.slice(0, 200)}`)
  }
  if (text.includes('data: {"error"')) throw new Error(`error event in the stream: ${text.slice(0, 300)}`)
  return { ttfbMs: firstAt - sentAt, totalMs: doneAt - sentAt }
}

/** Measures every target `requests` times after `warmup` unrecorded rounds, taking turns. */
export async function measureTtfb(targets: TtfbTarget[], requests: number, warmup: number): Promise<TtfbResult[]> {
  const samples = targets.map(() => [] as Sample[])
  const errors = targets.map(() => 0)
  const firstErrors: (string | null)[] = targets.map(() => null)
  for (let round = 0; round < warmup + requests; round++) {
    for (const [index, target] of targets.entries()) {
      try {
        const sample = await measureOnce(target, round)
        if (round >= warmup) samples[index]!.push(sample)
      } catch (error) {
        if (round >= warmup) errors[index]!++
        firstErrors[index] ??= (error as Error).message
      }
    }
  }
  return targets.map((target, index) => {
    const ttfb = samples[index]!.map((sample) => sample.ttfbMs).sort((a, b) => a - b)
    const total = samples[index]!.map((sample) => sample.totalMs).sort((a, b) => a - b)
    return {
      name: target.name,
      samples: ttfb.length,
      errors: errors[index]!,
      firstError: firstErrors[index]!,
      ttfbMs: { p50: percentile(ttfb, 50), p90: percentile(ttfb, 90) },
      totalMs: { p50: percentile(total, 50), p90: percentile(total, 90) },
    }
  })
}

/** A streamed chat request for `model` asking for 16 tokens and the usage chunk. */
export function streamedChatBody(model: string): string {
  return JSON.stringify({
    model,
    max_tokens: 16,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Say something short.' }],
  })
}


if (import.meta.main) {
  const args = Bun.argv.slice(2)
  const url = argValue(args, ['--url'])
  const model = argValue(args, ['--model'])
  if (!url || !model) {
    console.error('usage: bun bench/ttfb.ts --url URL --model MODEL [--key KEY] [-n 200] [--warmup 20]')
    process.exit(2)
  }
  const requests = Number(argValue(args, ['-n', '--requests']) ?? 200)
  const warmup = Number(argValue(args, ['--warmup']) ?? 20)
  const key = argValue(args, ['--key'])
  const [result] = await measureTtfb([{ name: model, url, body: streamedChatBody(model), keys: key ? [key] : [] }], requests, warmup)
  console.log(JSON.stringify(result, null, 2))
}
