import { parseArgs } from 'node:util'

export const loadUsage = `Usage: bun bench/load.ts --base-url URL --model MODEL [options]

Load for any OpenAI-compatible endpoint (nilegate, vLLM, another gateway): chat completions, plain or
streamed, or embeddings. Prints a progress line a second on stderr, then a table; --json for JSON.

  --base-url URL      the API's base, e.g. http://127.0.0.1:8080/v1 (requests go to URL/chat/completions)
  --url URL           instead of --base-url: the endpoint's whole URL
  --model MODEL       the model to ask for
  --api-key KEY       sent as Authorization: Bearer KEY
  --keys FILE         instead of --api-key: API keys one a line, taken in turn by successive requests
  --concurrency N     requests in flight at most (default 10)
  --duration S        no request starts after S seconds (default 10; 600 with --requests alone)
  --requests N        no more than N requests are sent
  --rps R             open loop: start R requests a second whatever the answers, --concurrency in flight
                      at most; an arrival finding them all busy is dropped (reported). Without it, a
                      closed loop: each of --concurrency workers sends its next request when answered
  --stream            streamed chat (stream_options.include_usage), with time to first token
  --max-tokens M      max_tokens of each chat request (default 16)
  --prompt TEXT       the user message, or the embeddings input (default "Say something short.")
  --prompt-file F     the same from a file
  --embeddings        POST /embeddings instead of chat
  --body-file F       send this request body as it is (its "stream" decides streaming)
  --timeout S         a request not answered in full within S seconds is abandoned (default 60)
  --json FILE         also write the results as JSON to FILE; "--json -" prints JSON on stdout and the
                      table on stderr
  --quiet             no progress line

Every request still running at the end of --duration gets its --timeout; the run stops at
duration + timeout at the latest, whatever the server does.`

/** One run of the load tester, as parsed from its command line. */
export interface LoadOptions {
  /** The endpoint: BASE/chat/completions or BASE/embeddings. */
  url: string
  /** The request body sent every time. */
  body: string
  model: string
  isStream: boolean
  isEmbeddings: boolean
  /** Null for a --body-file, whose own max_tokens (if any) applies. */
  maxTokens: number | null
  /** Taken in turn; empty sends no Authorization. */
  keys: string[]
  concurrency: number
  /** Open loop at this rate, or null for a closed loop. */
  rps: number | null
  durationMs: number
  maxRequests: number | null
  timeoutMs: number
  /** A file, `-` for stdout, or null. */
  jsonPath: string | null
  isQuiet: boolean
}

/** A command line the tester cannot run (exit code 2), or --help when its message is empty. */
export class UsageError extends Error {}

function positive(name: string, raw: string | undefined, fallback: number, isInteger: boolean): number {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0 || (isInteger && !Number.isInteger(value))) {
    throw new UsageError(`--${name} must be a positive ${isInteger ? 'integer' : 'number'}, got ${raw}`)
  }
  return value
}

async function readText(path: string, what: string): Promise<string> {
  const file = Bun.file(path)
  if (!(await file.exists())) throw new UsageError(`${what}: no file ${path}`)
  return file.text()
}

/** Parses the command line and reads the files it names. */
export async function parseLoadOptions(args: string[]): Promise<LoadOptions> {
  let values
  try {
    values = parseArgs({
      args,
      strict: true,
      options: {
        'base-url': { type: 'string' },
        url: { type: 'string' },
        model: { type: 'string' },
        'api-key': { type: 'string' },
        keys: { type: 'string' },
        concurrency: { type: 'string', short: 'c' },
        duration: { type: 'string', short: 'd' },
        requests: { type: 'string', short: 'n' },
        rps: { type: 'string' },
        stream: { type: 'boolean' },
        'max-tokens': { type: 'string' },
        prompt: { type: 'string' },
        'prompt-file': { type: 'string' },
        embeddings: { type: 'boolean' },
        'body-file': { type: 'string' },
        timeout: { type: 'string' },
        json: { type: 'string' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  if (values.help) throw new UsageError('')
  const exclusive = (a: keyof typeof values, b: keyof typeof values) => {
    if (values[a] !== undefined && values[b] !== undefined) throw new UsageError(`--${a} and --${b} exclude each other`)
  }
  exclusive('base-url', 'url')
  exclusive('api-key', 'keys')
  exclusive('prompt', 'prompt-file')
  exclusive('body-file', 'prompt')
  exclusive('body-file', 'prompt-file')
  exclusive('body-file', 'max-tokens')
  exclusive('body-file', 'stream')
  exclusive('body-file', 'embeddings')
  exclusive('embeddings', 'stream')
  exclusive('embeddings', 'max-tokens')

  const isEmbeddings = values.embeddings === true || /\/embeddings\/?$/.test(values.url ?? '')
  const baseUrl = values['base-url']?.replace(/\/+$/, '')
  const url = values.url ?? (baseUrl ? `${baseUrl}/${isEmbeddings ? 'embeddings' : 'chat/completions'}` : undefined)
  if (!url) throw new UsageError('--base-url (or --url) is required')
  if (!/^https?:\/\//.test(url)) throw new UsageError(`not an http(s) URL: ${url}`)

  let body: string
  let model: string
  let isStream: boolean
  let maxTokens: number | null = null
  if (values['body-file']) {
    body = await readText(values['body-file'], '--body-file')
    let parsed: { model?: unknown; stream?: unknown }
    try {
      parsed = JSON.parse(body)
    } catch {
      throw new UsageError(`--body-file: ${values['body-file']} is not JSON`)
    }
    model = values.model ?? (typeof parsed.model === 'string' ? parsed.model : '')
    if (values.model !== undefined && parsed.model !== values.model) throw new UsageError(`--model ${values.model} differs from the body's model ${String(parsed.model)}`)
    isStream = parsed.stream === true
  } else {
    if (!values.model) throw new UsageError('--model is required')
    model = values.model
    isStream = values.stream === true
    const prompt = values['prompt-file'] ? await readText(values['prompt-file'], '--prompt-file') : (values.prompt ?? 'Say something short.')
    if (isEmbeddings) {
      body = JSON.stringify({ model, input: prompt })
    } else {
      maxTokens = positive('max-tokens', values['max-tokens'], 16, true)
      body = JSON.stringify({
        model,
        max_tokens: maxTokens,
        messages: [{ role: 'user', content: prompt }],
        ...(isStream ? { stream: true, stream_options: { include_usage: true } } : {}),
      })
    }
  }

  let keys: string[] = []
  if (values.keys) {
    keys = (await readText(values.keys, '--keys')).split(/\r?\n/).map((line) => line.trim()).filter(Boolean)
    if (keys.length === 0) throw new UsageError(`--keys: ${values.keys} holds no key`)
  } else if (values['api-key']) {
    keys = [values['api-key']]
  }

  const maxRequests = values.requests === undefined ? null : positive('requests', values.requests, 0, true)
  const defaultDurationS = maxRequests !== null && values.duration === undefined ? 600 : 10
  return {
    url,
    body,
    model,
    isStream,
    isEmbeddings,
    maxTokens,
    keys,
    concurrency: positive('concurrency', values.concurrency, 10, true),
    rps: values.rps === undefined ? null : positive('rps', values.rps, 0, false),
    durationMs: positive('duration', values.duration, defaultDurationS, false) * 1000,
    maxRequests,
    timeoutMs: positive('timeout', values.timeout, 60, false) * 1000,
    jsonPath: values.json ?? null,
    isQuiet: values.quiet === true,
  }
}
