import type { ChatCompletionRequest, ChatMessage, ContentPart } from '@nilegate/shared/schemas/chat'

/*
 * Estimates of tokens, for answers whose upstream reports no usage (the simulator's, a stream cut
 * short) and for the embeddings endpoint's token budgets. Never for a hold: an estimate is not a
 * bound (hold-bound.ts), and what is billed of an estimate is capped at the hold like any usage.
 */

/** Tokens added per message for role and framing, and once per reply for priming. */
export const messageOverheadTokens = 4
export const replyPrimingTokens = 3
/** Flat estimate for one image, audio or file part. */
export const mediaPartTokens = 256

/** Whether a UTF-16 code unit is an Arabic-script character. */
export function isArabicScript(code: number): boolean {
  return (
    (code >= 0x0600 && code <= 0x06ff) ||
    (code >= 0x0750 && code <= 0x077f) ||
    (code >= 0x08a0 && code <= 0x08ff) ||
    (code >= 0xfb50 && code <= 0xfdff) ||
    (code >= 0xfe70 && code <= 0xfeff)
  )
}

/**
 * Whether a UTF-16 code unit is a letter of an alphabet that tokenizers split about as finely as
 * Arabic script or finer: Greek, Cyrillic, Armenian, Hebrew; the Indic scripts (Devanagari to
 * Sinhala), Thai, Lao and Georgian.
 */
export function isDenseAlphabet(code: number): boolean {
  return (code >= 0x0370 && code <= 0x05ff) || (code >= 0x0900 && code <= 0x0eff) || (code >= 0x10a0 && code <= 0x10ff)
}

/**
 * Whether a UTF-16 code unit is a letter of a script that tokenizers hardly learn, so that a
 * character takes up to a token per UTF-8 byte, three: Syriac, Thaana, N'Ko, Samaritan and Mandaic;
 * Tibetan and Myanmar; Ethiopic, Cherokee, the Canadian syllabics, Khmer, Mongolian and the
 * scripts of South-East Asia after them (U+1200 to U+1C7F); Tifinagh; Vai; Javanese and Cham.
 * In sentences of them, cl100k_base made about 3 tokens a character of Amharic, Tigrinya and
 * Cherokee, 2.1 of Tibetan, Myanmar, Syriac and Thaana, 1.7 of Khmer.
 */
export function isRareScript(code: number): boolean {
  return (
    (code >= 0x0700 && code <= 0x089f) ||
    (code >= 0x0f00 && code <= 0x109f) ||
    (code >= 0x1200 && code <= 0x1c7f) ||
    (code >= 0x2d30 && code <= 0x2ddf) ||
    (code >= 0xa500 && code <= 0xa63f) ||
    (code >= 0xa980 && code <= 0xaaff) ||
    (code >= 0xab00 && code <= 0xabbf)
  )
}

/**
 * Whether a UTF-16 code unit is a CJK character that tokenizers give a token of its own or more:
 * Hangul Jamo and syllables, kana, CJK punctuation, radicals and ideographs, full-width forms.
 */
export function isCjk(code: number): boolean {
  return (
    (code >= 0x2e80 && code <= 0x9fff) ||
    (code >= 0xac00 && code <= 0xd7af) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xff00 && code <= 0xffef) ||
    (code >= 0x1100 && code <= 0x11ff)
  )
}

/**
 * Estimated tokens of a text, rounded up: Arabic-script characters at 2 per token (SPEC), and
 * the other alphabets tokenizers split as finely (`isDenseAlphabet`) alike; CJK characters, those
 * outside the basic plane (emoji, rarer ideographs: a surrogate pair), Latin letters with marks
 * (U+00C0 to U+024F and Vietnamese's in U+1E00 to U+1EFF) and combining marks (Yoruba's tones) at
 * one token each; the scripts tokenizers hardly learn (`isRareScript`) at three; everything else
 * at 4. Counted at 4 a token, a CJK or emoji prompt held about a quarter of what it costs, Hindi or
 * Thai on many tokenizers as little, Amharic a ninth, Vietnamese a half. Every code unit counts a
 * quarter token, and only those from U+00C0 on are looked at further: a 21,600-character English
 * prompt took 75 us with each one classified, 14 us this way.
 */
export function estimateTextTokens(text: string): number {
  const length = text.length
  let quarterTokens = length
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x00c0) continue
    if (isArabicScript(code) || isDenseAlphabet(code)) quarterTokens++
    else if (code < 0x0370 || (code >= 0x1e00 && code <= 0x1eff)) quarterTokens += 3
    else if (isRareScript(code)) quarterTokens += 11
    else if (code >= 0xd800 && code <= 0xdbff) {
      // A high surrogate and the low one after it are one character: four quarters for the two.
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        quarterTokens += 2
        i++
      }
    } else if (isCjk(code)) quarterTokens += 3
  }
  return Math.ceil(quarterTokens / 4)
}

function estimatePartTokens(part: ContentPart): number {
  switch (part.type) {
    case 'text':
      return estimateTextTokens(part.text)
    case 'refusal':
      return estimateTextTokens(part.refusal)
    default:
      return mediaPartTokens
  }
}

/** Estimated prompt tokens of a conversation. */
export function estimatePromptTokens(messages: readonly ChatMessage[]): number {
  let tokens = replyPrimingTokens
  for (const message of messages) {
    tokens += messageOverheadTokens
    const content = message.content
    if (typeof content === 'string') tokens += estimateTextTokens(content)
    else if (Array.isArray(content)) for (const part of content) tokens += estimatePartTokens(part)
    if (message.role === 'assistant' && message.tool_calls) {
      for (const call of message.tool_calls) tokens += estimateTextTokens(call.function.name) + estimateTextTokens(call.function.arguments)
    }
  }
  return tokens
}

// A request's estimate, kept with its body: the simulator's usage and a stream's usage when the
// upstream reports none both ask for it, and a long conversation or large tool schemas cost a pass
// over their text each time. Bodies are not changed once validated.
const estimatedBodies = new WeakMap<object, number>()

/**
 * Estimated prompt tokens of a chat request: its conversation, and the tool definitions and the
 * response schema, which the model reads as input too (and upstreams bill as prompt tokens),
 * estimated from their JSON text. Worked out once per body.
 */
export function estimateChatPromptTokens(body: Pick<ChatCompletionRequest, 'messages' | 'tools' | 'response_format'>): number {
  const known = estimatedBodies.get(body)
  if (known !== undefined) return known
  let tokens = estimatePromptTokens(body.messages)
  if (body.tools && body.tools.length > 0) tokens += estimateTextTokens(JSON.stringify(body.tools))
  if (body.response_format?.type === 'json_schema') tokens += estimateTextTokens(JSON.stringify(body.response_format.json_schema))
  estimatedBodies.set(body, tokens)
  return tokens
}
