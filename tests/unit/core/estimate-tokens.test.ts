import { describe, expect, test } from 'bun:test'
import { estimateChatPromptTokens, estimatePromptTokens, estimateTextTokens, mediaPartTokens, messageOverheadTokens, replyPrimingTokens } from '../../../server/core/estimate-tokens'

describe('token estimator', () => {
  test('counts four characters a token for Latin text and two for Arabic script, rounding up', () => {
    expect(estimateTextTokens('')).toBe(0)
    expect(estimateTextTokens('abcd')).toBe(1)
    expect(estimateTextTokens('abcde')).toBe(2)
    expect(estimateTextTokens('مرحبا')).toBe(3)
    expect(estimateTextTokens('مر ab')).toBe(2)
  })

  test('counts a character outside the basic plane, as a surrogate pair, one token', () => {
    expect(estimateTextTokens('😀😀😀😀')).toBe(4)
    expect(estimateTextTokens('😀abcd')).toBe(2)
    expect(estimateTextTokens('𠀀𠀁')).toBe(2)
  })

  test('counts every range of Arabic script at two characters a token, and the code units around them otherwise', () => {
    // The first and last code unit of each Arabic range, and their neighbours outside it: Syriac,
    // Thaana and Arabic Extended-B count as scripts tokenizers hardly learn, the others at four a token.
    const arabic = [0x0600, 0x06ff, 0x0750, 0x077f, 0x08a0, 0x08ff, 0xfb50, 0xfdff, 0xfe70, 0xfeff]
    const rare = [0x0700, 0x074f, 0x0780, 0x089f]
    const other = [0xfb4f, 0xfe00, 0xfe6f, 0xfff0, 0xd7ff, 0xe000]
    for (const code of arabic) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(2)
    for (const code of rare) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(12)
    for (const code of other) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(1)
    // A lone surrogate, high or low, counts as a character at four a token.
    expect(estimateTextTokens('\udc00'.repeat(4) + 'abcd')).toBe(2)
    expect(estimateTextTokens('\ud800'.repeat(4) + 'abcd')).toBe(2)
    expect(estimateTextTokens('\ud800abc')).toBe(1)
  })

  test('counts Greek, Cyrillic, Armenian, Hebrew, the Indic scripts, Thai, Lao and Georgian at two characters a token', () => {
    expect(estimateTextTokens('привет')).toBe(3)
    expect(estimateTextTokens('नमस्ते')).toBe(3)
    expect(estimateTextTokens('สวัสดี')).toBe(3)
    expect(estimateTextTokens('שלום')).toBe(2)
    // The first and last code unit of each range, and their neighbours outside it.
    const dense = [0x0370, 0x0400, 0x05ff, 0x0900, 0x0dff, 0x0e00, 0x0eff, 0x10a0, 0x10ff]
    for (const code of dense) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(2)
    // Their neighbours: a combining mark, Samaritan, Tibetan, Myanmar, Hangul Jamo past Georgian, Ethiopic.
    expect([0x036f, 0x0800, 0x0f00, 0x109f, 0x1100, 0x1200].map((code) => estimateTextTokens(String.fromCharCode(code).repeat(4)))).toEqual([4, 12, 12, 12, 4, 12])
  })

  test('counts the scripts tokenizers hardly learn at three tokens a character', () => {
    expect(estimateTextTokens('ሰላም')).toBe(9)
    expect(estimateTextTokens('ሰላም abc')).toBe(10)
    expect(estimateTextTokens('བཀྲ')).toBe(9)
    expect(estimateTextTokens('ᏣᎳᎩ')).toBe(9)
    // The first and last code unit of each range, and their neighbours outside it.
    const rare = [0x0700, 0x089f, 0x0f00, 0x109f, 0x1200, 0x1780, 0x1c7f, 0x2d30, 0x2ddf, 0xa500, 0xa63f, 0xa980, 0xaaff, 0xab00, 0xabbf]
    const other = [0x1c80, 0x2d2f, 0x2de0, 0xa4ff, 0xa640, 0xa97f, 0xabc0]
    for (const code of rare) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(12)
    for (const code of other) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(1)
  })

  test('counts Latin letters with marks, Vietnamese ones and combining marks one token each', () => {
    expect(estimateTextTokens('café')).toBe(2)
    expect(estimateTextTokens('Việt Nam')).toBe(3)
    expect(estimateTextTokens('a\u0300a\u0301')).toBe(3)
    const marked = [0x00c0, 0x00ff, 0x0100, 0x024f, 0x0300, 0x036f, 0x1e00, 0x1eff]
    const other = [0x00bf, 0x1dff, 0x1f00]
    for (const code of marked) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(4)
    for (const code of other) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(1)
  })

  test('counts CJK characters one token each', () => {
    expect(estimateTextTokens('你好世界')).toBe(4)
    expect(estimateTextTokens('こんにちは')).toBe(5)
    expect(estimateTextTokens('안녕하세요')).toBe(5)
    expect(estimateTextTokens('你好 abc')).toBe(3)
    // The first and last code unit of each range, and their neighbours outside it.
    const cjk = [0x1100, 0x11ff, 0x2e80, 0x3000, 0x3042, 0x4e00, 0x9fff, 0xac00, 0xd7af, 0xf900, 0xfaff, 0xff00, 0xffef]
    const other = [0x2e7f, 0xa000, 0xabff, 0xd7b0, 0xe000, 0xf8ff, 0xfb00, 0xfff0]
    for (const code of cjk) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(4)
    for (const code of other) expect(estimateTextTokens(String.fromCharCode(code).repeat(4))).toBe(1)
  })

  test('adds a fixed overhead per message, per reply and per media part', () => {
    const tokens = estimatePromptTokens([
      { role: 'system', content: 'abcd' },
      { role: 'user', content: [{ type: 'text', text: 'abcdefgh' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'abcd', arguments: '{}' } }] },
    ])

    expect(tokens).toBe(replyPrimingTokens + 3 * messageOverheadTokens + 1 + 2 + mediaPartTokens + 1 + 1)
  })

  test("counts a request's tool definitions and JSON schema from their JSON text, and no other response format", () => {
    const messages = [{ role: 'user' as const, content: 'abcd' }]
    const tools = [{ type: 'function' as const, function: { name: 'lookup', description: 'Finds a city.', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]
    const jsonSchema = { name: 'answer', schema: { type: 'object', properties: { ok: { type: 'boolean' } } } }
    const base = estimatePromptTokens(messages)

    expect(estimateChatPromptTokens({ messages })).toBe(base)
    expect(estimateChatPromptTokens({ messages, tools: [] })).toBe(base)
    expect(estimateChatPromptTokens({ messages, tools })).toBe(base + estimateTextTokens(JSON.stringify(tools)))
    expect(estimateChatPromptTokens({ messages, response_format: { type: 'json_schema', json_schema: jsonSchema } })).toBe(base + estimateTextTokens(JSON.stringify(jsonSchema)))
    expect(estimateChatPromptTokens({ messages, response_format: { type: 'json_object' } })).toBe(base)
  })

  test('goes over a request body once, however often it is asked, and over each body on its own', () => {
    let reads = 0
    const body = {
      get messages() {
        reads++
        return [{ role: 'user' as const, content: 'a'.repeat(400) }]
      },
    }
    const other = { messages: [{ role: 'user' as const, content: 'abcd' }] }

    const first = estimateChatPromptTokens(body)
    const again = estimateChatPromptTokens(body)
    const readsForBoth = reads

    expect([first, again, readsForBoth]).toEqual([estimatePromptTokens(body.messages), first, 1])
    expect(estimateChatPromptTokens(other)).toBe(estimatePromptTokens(other.messages))
  })
})
