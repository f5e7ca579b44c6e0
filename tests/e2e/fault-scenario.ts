import { join } from 'node:path'
import { costMicros, parseEgp } from '../../server/core/money'
import { catalogFileModel } from '../support/catalog-file-model'
import { createTempDir } from '../support/databases'
import { demoCatalogPath } from '../support/test-app'

/**
 * What the billing fault scenarios share: a catalog of simulator models whose requests cost exactly
 * their worst case, traffic that never throws, and a teardown that undoes whatever was started.
 */

// The prompt is free and output costs 15 EGP per 1M tokens: a request's hold (its max_tokens at the
// output price, whatever the bound of its prompt) is exactly what it costs.
const prices = { input_price_egp: '0', output_price_egp: '15' }
/** Answers at once. */
export const quickModel = 'e2e/quick'
/** Answers after 200 ms: a dozen workers per key stay under the edge guard's 100 requests per second. */
export const pacedModel = 'e2e/paced'
/** Streams one token every 200 ms; its hold lives `slowStreamTotalMs` plus RESERVATION_MARGIN_MS. */
export const slowStreamModel = 'e2e/slow-stream'
export const slowStreamTotalMs = 5_000

const messages = [{ role: 'user' as const, content: 'Tell me about the Nile' }]
// The simulator answers at least 16 tokens unless capped, so every request below costs its worst case.
const maxTokens = 16
/** The body of a request to `model`. */
export const request = (model: string) => ({ model, messages, max_tokens: maxTokens })
/** What each request of `request()` holds on admission and costs when it ends. */
export const worstCaseMicros = costMicros(0, maxTokens, parseEgp(prices.input_price_egp), parseEgp(prices.output_price_egp))
/** Micro-EGP as the `--balance-egp` of `bun server/cli.ts demo`. */
export const egp = (micros: bigint) => (Number(micros) / 1_000_000).toFixed(6)

function simulatorModel(id: string, deployment: Record<string, unknown>) {
  return catalogFileModel({ id, owned_by: 'e2e (simulator)', max_output_tokens: 64, published: '2025-01-01', ...prices, deployments: [{ provider: 'simulator', ...deployment }] })
}

/** Writes the demo catalog plus the models above to a temp dir; returns its path and how to remove it. */
export async function writeFaultCatalog(): Promise<{ path: string; remove(): void }> {
  const dir = createTempDir('billing-faults')
  const demo = (await Bun.file(demoCatalogPath).json()) as { models: unknown[] }
  const models = [
    simulatorModel(quickModel, {}),
    simulatorModel(pacedModel, { simulator: { ttft_ms: 200 } }),
    simulatorModel(slowStreamModel, { simulator: { inter_token_ms: 200 }, timeouts_ms: { total: slowStreamTotalMs } }),
  ]
  const path = join(dir.path, 'catalog.json')
  await Bun.write(path, JSON.stringify({ models: [...demo.models, ...models] }))
  return { path, remove: dir.remove }
}

/** One answer of the gateway as a load generator sees it; status 0 when none came in time. */
export interface Answer {
  status: number
  code: string | null
  requestId: string | null
  /** performance.now() when the request was sent and when its answer was complete. */
  sentAtMs: number
  answeredAtMs: number
}

/** POST /chat/completions, never throwing: a hang or a refused connection is an answer with status 0. */
export async function chat(baseUrl: string, apiKey: string, body: Record<string, unknown>, timeoutMs = 10_000): Promise<Answer> {
  const sentAtMs = performance.now()
  try {
    const response = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    })
    const answer = (await response.json()) as { error?: { code: string } }
    return { status: response.status, code: answer.error?.code ?? null, requestId: response.headers.get('x-request-id'), sentAtMs, answeredAtMs: performance.now() }
  } catch (error) {
    return { status: 0, code: `no answer: ${(error as Error).message}`, requestId: null, sentAtMs, answeredAtMs: performance.now() }
  }
}

/**
 * Opens a streamed completion of `slowStreamModel` and reads it until `events` SSE events arrived.
 * `rest` reads on to the end: the whole text, and what ended it early (the gateway died), if anything.
 */
export async function openSlowStream(baseUrl: string, apiKey: string, events: number): Promise<{ requestId: string; rest: Promise<{ text: string; error: unknown }> }> {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...request(slowStreamModel), stream: true }),
    signal: AbortSignal.timeout(20_000),
  })
  if (response.status !== 200) throw new Error(`the stream was refused with ${response.status}: ${await response.text()}`)
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let text = ''
  while (text.split('data: ').length - 1 < events) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`the stream ended after ${text}`)
    text += value
  }
  const rest = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return { text, error: null }
        text += value
      }
    } catch (error) {
      return { text, error }
    }
  })()
  return { requestId: response.headers.get('x-request-id')!, rest }
}

/** How many answers had each status (and error code), e.g. `{ '200': 12, '402 insufficient_balance': 3 }`. */
export function tally(answers: readonly Answer[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const { status, code } of answers) {
    const label = code ? `${status} ${code}` : String(status)
    counts[label] = (counts[label] ?? 0) + 1
  }
  return counts
}

/** The request ids of the answers with status 200, sorted. */
export function servedIds(answers: readonly Answer[]): string[] {
  return answers
    .filter((answer) => answer.status === 200)
    .map((answer) => answer.requestId!)
    .sort()
}

/** Undoes what a scenario started, last first, whatever failed on the way (call `run` in afterAll). */
export function teardown(): { push(step: () => unknown): void; run(): Promise<void> } {
  const steps: Array<() => unknown> = []
  return {
    push: (step) => void steps.push(step),
    async run() {
      for (const step of steps.splice(0).reverse()) await step()
    },
  }
}
