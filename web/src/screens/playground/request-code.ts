/**
 * The playground's request as code to copy: curl, the `openai` Node package and `@nilegate/sdk`,
 * each sending exactly the body the playground sends, to the inference route with an API key. The
 * session never appears: the key is a placeholder read from the environment.
 */

export type MessageRole = 'system' | 'user' | 'assistant'

/** One message as the playground edits it. */
export interface DraftMessage {
  role: MessageRole
  content: string
}

/** The playground's settings as typed: empty strings are left out of the request. */
export interface DraftSettings {
  model: string
  temperature: string
  top_p: string
  max_tokens: string
  /** One stop sequence a line, at most 4. */
  stop: string
  presence_penalty: string
  frequency_penalty: string
  seed: string
}

/** The body of a streamed chat completion, with usage in its last chunk. */
export interface PlaygroundRequest {
  model: string
  messages: DraftMessage[]
  temperature?: number
  top_p?: number
  max_tokens?: number
  stop?: string | string[]
  presence_penalty?: number
  frequency_penalty?: number
  seed?: number
  stream: true
  stream_options: { include_usage: true }
}

/** A setting that cannot be sent, named by its request field. */
export interface SettingProblem {
  param: keyof DraftSettings | 'messages'
  message: string
}

const numberSettings = [
  { param: 'temperature', min: 0, max: 2, integer: false },
  { param: 'top_p', min: 0, max: 1, integer: false },
  { param: 'max_tokens', min: 1, max: Number.MAX_SAFE_INTEGER, integer: true },
  { param: 'presence_penalty', min: -2, max: 2, integer: false },
  { param: 'frequency_penalty', min: -2, max: 2, integer: false },
  { param: 'seed', min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER, integer: true },
] as const

function rangeText(setting: (typeof numberSettings)[number]): string {
  if (setting.param === 'max_tokens') return 'a positive whole number'
  if (setting.param === 'seed') return 'a whole number'
  return `a number from ${setting.min} to ${setting.max}`
}

/**
 * The request the draft makes, or what is wrong with it (each problem at its field). Messages left
 * blank are not sent: an empty system message says nothing.
 */
export function buildRequest(settings: DraftSettings, messages: DraftMessage[]): { request: PlaygroundRequest } | { problems: SettingProblem[] } {
  const problems: SettingProblem[] = []
  const written = messages.filter((message) => message.content.trim() !== '').map(({ role, content }) => ({ role, content }))
  const request = { model: settings.model, messages: written } as PlaygroundRequest
  if (settings.model === '') problems.push({ param: 'model', message: 'Choose a model.' })
  if (written.length === 0) problems.push({ param: 'messages', message: 'Write at least one message.' })
  for (const setting of numberSettings) {
    const text = settings[setting.param].trim()
    if (text === '') continue
    const value = Number(text)
    if (!Number.isFinite(value) || value < setting.min || value > setting.max || (setting.integer && !Number.isInteger(value))) {
      problems.push({ param: setting.param, message: `${setting.param} must be ${rangeText(setting)}.` })
    } else {
      request[setting.param] = value
    }
  }
  const stops = settings.stop.split('\n').filter((line) => line !== '')
  if (stops.length > 4) problems.push({ param: 'stop', message: 'Give at most 4 stop sequences, one a line.' })
  else if (stops.length === 1) request.stop = stops[0]
  else if (stops.length > 1) request.stop = stops
  if (problems.length > 0) return { problems }
  // Last, so that the settings read first in the code shown.
  request.stream = true
  request.stream_options = { include_usage: true }
  return { request }
}

/** `text` inside single quotes for a POSIX shell. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'"'"'`)}'`
}

/** The request as a curl command; the answer streams as server-sent events. */
export function curlCode(baseURL: string, request: PlaygroundRequest): string {
  return [
    `curl -N ${shellQuote(`${baseURL}/chat/completions`)} \\`,
    `  -H "Authorization: Bearer $NILEGATE_API_KEY" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d ${shellQuote(JSON.stringify(request, null, 2))}`,
  ].join('\n')
}

/** The request with the `openai` package for Node. */
export function openaiNodeCode(baseURL: string, request: PlaygroundRequest): string {
  return [
    `import OpenAI from 'openai'`,
    ``,
    `const client = new OpenAI({ baseURL: ${JSON.stringify(baseURL)}, apiKey: process.env.NILEGATE_API_KEY })`,
    ``,
    `const stream = await client.chat.completions.create(${JSON.stringify(request, null, 2)})`,
    `for await (const chunk of stream) {`,
    `  process.stdout.write(chunk.choices[0]?.delta?.content ?? '')`,
    `  if (chunk.usage) console.log('\\n', chunk.usage)`,
    `}`,
  ].join('\n')
}

/** The request with `@nilegate/sdk`. */
export function nilegateSdkCode(baseURL: string, request: PlaygroundRequest): string {
  return [
    `import { Nilegate } from '@nilegate/sdk'`,
    ``,
    `const client = new Nilegate({ baseURL: ${JSON.stringify(baseURL)}, apiKey: process.env.NILEGATE_API_KEY })`,
    ``,
    `const stream = await client.chat.completions.create(${JSON.stringify(request, null, 2)})`,
    `for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '')`,
    `console.log('\\n', stream.usage)`,
  ].join('\n')
}
