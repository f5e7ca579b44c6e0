import { GatewayError } from '@nilegate/shared/errors'

export const messageRoles = new Set(['system', 'developer', 'user', 'assistant', 'tool'])
/** SPEC 8.2 rule 3: per-message and per-request content limits, answered with 422. */
export const maxTextCharsPerMessage = 2_000_000
export const maxMediaBytesPerMessage = 5_000_000
export const maxMediaPartsPerRequest = 20

/** Bytes a base64 string decodes to, without decoding it. */
export function base64DecodedBytes(base64: string): number {
  let padding = 0
  if (base64.endsWith('==')) padding = 2
  else if (base64.endsWith('=')) padding = 1
  return Math.floor((base64.length * 3) / 4) - padding
}

function mediaBytes(part: Record<string, unknown>): number {
  const nested = part[part.type as string] as Record<string, unknown> | undefined
  if (!nested || typeof nested !== 'object') return 0
  const data = part.type === 'image_url' ? nested.url : part.type === 'input_audio' ? nested.data : nested.file_data
  if (typeof data !== 'string') return 0
  const comma = data.startsWith('data:') ? data.indexOf(',') : -1
  if (part.type === 'image_url' && comma < 0) return 0
  return base64DecodedBytes(comma >= 0 ? data.slice(comma + 1) : data)
}

function isMissing(content: unknown): boolean {
  return content === undefined || content === null || (Array.isArray(content) && content.length === 0)
}

/**
 * The message rules that need a precise code rather than a schema error: roles (invalid_role),
 * content presence (missing_content) and the 422 content limits. Runs on the raw body before
 * schema validation; shapes it does not understand are left to the schema.
 */
export function checkMessages(messages: unknown): void {
  if (!Array.isArray(messages)) return
  let mediaParts = 0
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as Record<string, unknown> | null
    if (!message || typeof message !== 'object') continue
    const role = message.role
    if (typeof role !== 'string' || !messageRoles.has(role)) {
      throw new GatewayError('invalid_role', `Invalid role ${JSON.stringify(role ?? null)} in messages[${i}]: use one of system, developer, user, assistant or tool.`, `messages[${i}].role`)
    }
    const content = message.content
    const hasToolCalls = role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0
    if (isMissing(content) && !hasToolCalls) {
      throw new GatewayError('missing_content', `messages[${i}] (${role}) has no content.`, `messages[${i}].content`)
    }
    let textChars = typeof content === 'string' ? content.length : 0
    let bytes = 0
    if (Array.isArray(content)) {
      for (const part of content as Array<Record<string, unknown>>) {
        if (!part || typeof part !== 'object') continue
        if (part.type === 'text' && typeof part.text === 'string') textChars += part.text.length
        else if (part.type === 'image_url' || part.type === 'input_audio' || part.type === 'file') {
          mediaParts++
          bytes += mediaBytes(part)
        }
      }
    }
    if (textChars > maxTextCharsPerMessage) {
      throw new GatewayError('content_limit_exceeded', `messages[${i}] has ${textChars} characters of text; the limit is ${maxTextCharsPerMessage} per message.`, `messages[${i}].content`)
    }
    if (bytes > maxMediaBytesPerMessage) {
      throw new GatewayError('content_limit_exceeded', `messages[${i}] carries ${bytes} bytes of media (decoded); the limit is ${maxMediaBytesPerMessage} per message.`, `messages[${i}].content`)
    }
  }
  if (mediaParts > maxMediaPartsPerRequest) {
    throw new GatewayError('content_limit_exceeded', `The request has ${mediaParts} media parts; the limit is ${maxMediaPartsPerRequest}.`, 'messages')
  }
}
