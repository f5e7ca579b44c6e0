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

/** Where a media part keeps its data: the field's name within the part, for `param`. */
const mediaFields: Record<string, string> = { image_url: 'image_url.url', input_audio: 'input_audio.data', file: 'file.file_data' }

/**
 * A media part's data: the base64 of a data URL (or, for audio and files, bare base64), with the
 * field it came from; null for an image at a web address or a part without data (a file by id).
 * An image URL of another scheme, or a data URL that is not base64, is refused.
 */
function mediaData(part: Record<string, unknown>, param: string): string | null {
  const nested = part[part.type as string] as Record<string, unknown> | undefined
  if (!nested || typeof nested !== 'object') return null
  const data = part.type === 'image_url' ? nested.url : part.type === 'input_audio' ? nested.data : nested.file_data
  if (typeof data !== 'string') return null
  if (!data.startsWith('data:')) {
    if (part.type !== 'image_url') return data
    if (/^https?:\/\//i.test(data)) return null
    throw new GatewayError('invalid_request', `Invalid ${param}: use an http(s) URL or a base64 data URL (data:image/png;base64,...).`, param)
  }
  const comma = data.indexOf(',')
  if (comma < 0 || !data.slice(0, comma).endsWith(';base64')) {
    throw new GatewayError('invalid_request', `Invalid ${param}: a data URL must carry base64 (data:<media type>;base64,<data>).`, param)
  }
  return data.slice(comma + 1)
}

// Standard base64 (RFC 4648 section 4), padded or not, without whitespace.
const base64Pattern = /^[A-Za-z0-9+/]*$/

/** Whether a string is base64 that decodes to at least one byte. */
export function isBase64(data: string): boolean {
  let end = data.length
  if (data.endsWith('==')) end -= 2
  else if (data.endsWith('=')) end -= 1
  if (end === 0 || end % 4 === 1 || (end < data.length && data.length % 4 !== 0)) return false
  return base64Pattern.test(end === data.length ? data : data.slice(0, end))
}

function isMissing(content: unknown): boolean {
  return content === undefined || content === null || (Array.isArray(content) && content.length === 0)
}

/**
 * The message rules that need a precise code rather than a schema error: roles (invalid_role),
 * content presence (missing_content), the 422 content limits, and media data an upstream could not
 * read (an image URL that is neither http(s) nor a data URL, data that is not base64: both
 * invalid_request naming the field). Runs on the raw body before schema validation; shapes it does
 * not understand are left to the schema.
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
    let media: Array<{ data: string; param: string }> | null = null
    if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        const part = content[j] as Record<string, unknown> | null
        if (!part || typeof part !== 'object') continue
        if (part.type === 'text' && typeof part.text === 'string') textChars += part.text.length
        else if (part.type === 'image_url' || part.type === 'input_audio' || part.type === 'file') {
          mediaParts++
          const param = `messages[${i}].content[${j}].${mediaFields[part.type]}`
          const data = mediaData(part, param)
          if (data === null) continue
          bytes += base64DecodedBytes(data)
          if (media === null) media = []
          media.push({ data, param })
        }
      }
    }
    if (textChars > maxTextCharsPerMessage) {
      throw new GatewayError('content_limit_exceeded', `messages[${i}] has ${textChars} characters of text; the limit is ${maxTextCharsPerMessage} per message.`, `messages[${i}].content`)
    }
    if (bytes > maxMediaBytesPerMessage) {
      throw new GatewayError('content_limit_exceeded', `messages[${i}] carries ${bytes} bytes of media (decoded); the limit is ${maxMediaBytesPerMessage} per message.`, `messages[${i}].content`)
    }
    // Within the limits, so no more than 5 MB of media is read here.
    for (const { data, param } of media ?? []) {
      if (!isBase64(data)) throw new GatewayError('invalid_request', `Invalid ${param}: the data is not base64 (A-Z, a-z, 0-9, + and /, padded with =, no spaces).`, param)
    }
  }
  if (mediaParts > maxMediaPartsPerRequest) {
    throw new GatewayError('content_limit_exceeded', `The request has ${mediaParts} media parts; the limit is ${maxMediaPartsPerRequest}.`, 'messages')
  }
}
