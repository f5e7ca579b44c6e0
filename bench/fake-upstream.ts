// A minimal OpenAI-compatible upstream for benchmarks. Every answer is precomputed (and cached per
// request shape), so talking to it directly measures the ceiling of the machine, not of this server.
//
//   bun bench/fake-upstream.ts [--port 0] [--host 127.0.0.1] [--ttft-ms 0] [--chunk-delay-ms 0]
//   env: FAKE_UPSTREAM_PORT, FAKE_UPSTREAM_HOST, FAKE_TTFT_MS, FAKE_CHUNK_DELAY_MS, FAKE_EMBEDDING_DIMS
//
// Prints `fake-upstream listening on http://HOST:PORT/v1` once it accepts connections.

export interface FakeUpstreamOptions {
  host: string
  /** 0 picks a free port. */
  port: number
  /** Delay before the first byte of a streamed answer (and before a plain answer). */
  ttftMs: number
  /** Delay between two streamed chunks. */
  chunkDelayMs: number
  /** Vector size of embeddings when the request names no `dimensions`. */
  embeddingDims: number
}

/** The fixed answer: 16 tokens, one per streamed content chunk. */
export const ANSWER_TOKENS = [
  'The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy',
  ' dog', ' and', ' then', ' runs', ' far', ' away', ' from', ' here.',
] as const
export const PROMPT_TOKENS = 12
const CREATED = Math.floor(Date.now() / 1000)
const COMPLETION_ID = 'chatcmpl-fake-upstream'
const MAX_CACHED = 4096

const jsonHeaders = { 'content-type': 'application/json' }
const sseHeaders = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }
const encoder = new TextEncoder()
type Bytes = Uint8Array<ArrayBuffer>

interface ChatShape {
  model: string
  tokens: number
  finishReason: 'stop' | 'length'
  stream: boolean
  includeUsage: boolean
}

function usageOf(completionTokens: number) {
  return { prompt_tokens: PROMPT_TOKENS, completion_tokens: completionTokens, total_tokens: PROMPT_TOKENS + completionTokens }
}

function chatCompletionBody(shape: ChatShape): string {
  return JSON.stringify({
    id: COMPLETION_ID,
    object: 'chat.completion',
    created: CREATED,
    model: shape.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: ANSWER_TOKENS.slice(0, shape.tokens).join(''), refusal: null },
        logprobs: null,
        finish_reason: shape.finishReason,
      },
    ],
    usage: usageOf(shape.tokens),
  })
}

/** The SSE events of one streamed answer, each already framed as `data: ...\n\n`. */
function chatStreamEvents(shape: ChatShape): string[] {
  // As OpenAI does: every chunk carries `usage` (null but on the last) only when usage was asked for.
  const chunk = (choices: unknown[], usage: unknown = null) => {
    const envelope = { id: COMPLETION_ID, object: 'chat.completion.chunk', created: CREATED, model: shape.model, choices }
    return `data: ${JSON.stringify(shape.includeUsage ? { ...envelope, usage } : envelope)}\n\n`
  }
  const choice = (delta: object, finishReason: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason: finishReason })
  const events = [chunk([choice({ role: 'assistant', content: '', refusal: null })])]
  for (const token of ANSWER_TOKENS.slice(0, shape.tokens)) events.push(chunk([choice({ content: token })]))
  events.push(chunk([choice({}, shape.finishReason)]))
  if (shape.includeUsage) events.push(chunk([], usageOf(shape.tokens)))
  events.push('data: [DONE]\n\n')
  return events
}

/** Bytes of answers by request shape; bounded so odd clients cannot grow it without limit. */
class AnswerCache<T> {
  private readonly entries = new Map<string, T>()
  get(key: string, build: () => T): T {
    const found = this.entries.get(key)
    if (found !== undefined) return found
    const built = build()
    if (this.entries.size < MAX_CACHED) this.entries.set(key, built)
    return built
  }
}

function positiveInt(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : null
}

function badRequest(message: string): Response {
  return Response.json({ error: { type: 'invalid_request_error', message, code: 'invalid_request', param: null } }, { status: 400 })
}

/** Starts the fake upstream; stop it with `server.stop(true)`. */
export function startFakeUpstream(options: FakeUpstreamOptions) {
  const plainAnswers = new AnswerCache<Bytes>()
  const streamAnswers = new AnswerCache<{ whole: Bytes; events: Bytes[] }>()
  const embeddingAnswers = new AnswerCache<Bytes>()
  const isPaced = options.ttftMs > 0 || options.chunkDelayMs > 0

  async function chat(request: Request): Promise<Response> {
    let body: Record<string, any>
    try {
      body = await request.json()
    } catch {
      return badRequest('The body is not JSON.')
    }
    const model = typeof body.model === 'string' ? body.model : 'fake-echo'
    const limit = positiveInt(body.max_completion_tokens) ?? positiveInt(body.max_tokens)
    const tokens = Math.min(ANSWER_TOKENS.length, limit ?? ANSWER_TOKENS.length)
    const shape: ChatShape = {
      model,
      tokens,
      finishReason: limit !== null && limit <= ANSWER_TOKENS.length ? 'length' : 'stop',
      stream: body.stream === true,
      includeUsage: body.stream === true && body.stream_options?.include_usage === true,
    }
    const key = `${shape.model}\u0000${shape.tokens}\u0000${shape.finishReason}\u0000${shape.includeUsage}`

    if (!shape.stream) {
      const bytes = plainAnswers.get(key, () => encoder.encode(chatCompletionBody(shape)))
      if (options.ttftMs > 0) await Bun.sleep(options.ttftMs)
      return new Response(bytes, { headers: jsonHeaders })
    }
    const answer = streamAnswers.get(key, () => {
      const events = chatStreamEvents(shape)
      return { whole: encoder.encode(events.join('')), events: events.map((event) => encoder.encode(event)) }
    })
    if (!isPaced) return new Response(answer.whole, { headers: sseHeaders })
    return new Response(pacedStream(answer.events, request.signal), { headers: sseHeaders })
  }

  function pacedStream(events: Bytes[], signal: AbortSignal): ReadableStream<Uint8Array> {
    let next = 0
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        const delayMs = next === 0 ? options.ttftMs : options.chunkDelayMs
        if (delayMs > 0) await Bun.sleep(delayMs)
        if (signal.aborted) return controller.close()
        controller.enqueue(events[next++]!)
        if (next === events.length) controller.close()
      },
    })
  }

  async function embeddings(request: Request): Promise<Response> {
    let body: Record<string, any>
    try {
      body = await request.json()
    } catch {
      return badRequest('The body is not JSON.')
    }
    const input = body.input
    if (input === undefined || input === '' || (Array.isArray(input) && input.length === 0)) return badRequest('input is empty.')
    const count = Array.isArray(input) && typeof input[0] !== 'number' ? input.length : 1
    const dims = positiveInt(body.dimensions) ?? options.embeddingDims
    const format = body.encoding_format === 'base64' ? 'base64' : 'float'
    const model = typeof body.model === 'string' ? body.model : 'fake-embed'
    const key = `${model}\u0000${count}\u0000${dims}\u0000${format}`
    const bytes = embeddingAnswers.get(key, () => encoder.encode(embeddingBody(model, count, dims, format)))
    return new Response(bytes, { headers: jsonHeaders })
  }

  const modelsBody = encoder.encode(
    JSON.stringify({
      object: 'list',
      data: ['fake-echo', 'fake-embed'].map((id) => ({ id, object: 'model', created: CREATED, owned_by: 'bench (fake upstream)' })),
    }),
  )

  const models = () => new Response(modelsBody, { headers: jsonHeaders })
  return Bun.serve({
    hostname: options.host,
    port: options.port,
    // The gateway may keep connections idle between bench phases.
    idleTimeout: 120,
    // Routed natively by Bun; with and without /v1, whichever base URL the client was given.
    routes: {
      '/v1/chat/completions': { POST: chat },
      '/chat/completions': { POST: chat },
      '/v1/embeddings': { POST: embeddings },
      '/embeddings': { POST: embeddings },
      '/v1/models': { GET: models },
      '/models': { GET: models },
    },
    fetch() {
      return Response.json({ error: { type: 'not_found', message: 'Not found.', code: 'not_found', param: null } }, { status: 404 })
    },
  })
}

/** A deterministic unit vector; its values do not matter, its size and encoding do. */
function embeddingBody(model: string, count: number, dims: number, format: 'float' | 'base64'): string {
  const vector = new Float32Array(dims)
  for (let i = 0; i < dims; i++) vector[i] = Math.sin(i + 1)
  let sumOfSquares = 0
  for (const value of vector) sumOfSquares += value * value
  const norm = Math.sqrt(sumOfSquares)
  for (let i = 0; i < dims; i++) vector[i] = vector[i]! / norm
  const embedding = format === 'base64' ? Buffer.from(vector.buffer).toString('base64') : Array.from(vector)
  return JSON.stringify({
    object: 'list',
    data: Array.from({ length: count }, (_, index) => ({ object: 'embedding', index, embedding })),
    model,
    usage: { prompt_tokens: count * 8, total_tokens: count * 8 },
  })
}

function readOption(args: string[], name: string, envName: string, fallback: number): number {
  const index = args.indexOf(`--${name}`)
  const raw = index >= 0 ? args[index + 1] : Bun.env[envName]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} / ${envName} must be a non-negative integer, got ${raw}`)
  return value
}

if (import.meta.main) {
  const args = Bun.argv.slice(2)
  const hostIndex = args.indexOf('--host')
  const server = startFakeUpstream({
    host: (hostIndex >= 0 ? args[hostIndex + 1] : Bun.env.FAKE_UPSTREAM_HOST) || '127.0.0.1',
    port: readOption(args, 'port', 'FAKE_UPSTREAM_PORT', 0),
    ttftMs: readOption(args, 'ttft-ms', 'FAKE_TTFT_MS', 0),
    chunkDelayMs: readOption(args, 'chunk-delay-ms', 'FAKE_CHUNK_DELAY_MS', 0),
    embeddingDims: readOption(args, 'embedding-dims', 'FAKE_EMBEDDING_DIMS', 1024) || 1024,
  })
  console.log(`fake-upstream listening on http://${server.hostname}:${server.port}/v1`)
  // Said on the way out, so a run whose upstream was stopped from outside can tell.
  const stop = (signal: string) => {
    console.log(`fake-upstream: ${signal}, stopping`)
    server.stop(true)
    process.exit(0)
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
}
