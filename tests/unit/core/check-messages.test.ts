import { describe, expect, test } from 'bun:test'
import type { GatewayError } from '@nilegate/shared/errors'
import { base64DecodedBytes, checkMessages, isBase64 } from '../../../server/core/check-messages'

function failure(messages: unknown): { code: string; param: string | null } | null {
  try {
    checkMessages(messages)
    return null
  } catch (error) {
    const { code, param } = error as GatewayError
    return { code, param }
  }
}

describe('checkMessages', () => {
  test('accepts every role, parts, and an assistant turn that only calls tools', () => {
    expect(
      failure([
        { role: 'developer', content: 'x' },
        { role: 'system', content: 'x' },
        { role: 'user', content: [{ type: 'text', text: 'x' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c', content: '' },
      ]),
    ).toBeNull()
  })

  test.each([
    [[{ role: 'bot', content: 'x' }], { code: 'invalid_role', param: 'messages[0].role' }],
    [[{ content: 'x' }], { code: 'invalid_role', param: 'messages[0].role' }],
    [[{ role: 'user', content: 'x' }, { role: 'user' }], { code: 'missing_content', param: 'messages[1].content' }],
    [[{ role: 'user', content: [] }], { code: 'missing_content', param: 'messages[0].content' }],
    [[{ role: 'assistant', content: null, tool_calls: [] }], { code: 'missing_content', param: 'messages[0].content' }],
    [[{ role: 'tool', content: null, tool_call_id: 'c' }], { code: 'missing_content', param: 'messages[0].content' }],
  ])('%j fails with %j', (messages, expected) => {
    expect(failure(messages)).toEqual(expected)
  })

  test('counts media per message by decoded size, data URLs and raw base64 alike', () => {
    const audio = { type: 'input_audio', input_audio: { data: 'A'.repeat(4_000_000), format: 'wav' } }
    const file = { type: 'file', file: { file_data: `data:application/pdf;base64,${'A'.repeat(4_000_000)}` } }

    expect(failure([{ role: 'user', content: [audio] }])).toBeNull()
    expect(failure([{ role: 'user', content: [audio, file] }])).toEqual({ code: 'content_limit_exceeded', param: 'messages[0].content' })
    expect(failure([{ role: 'user', content: [audio] }, { role: 'user', content: [file] }])).toBeNull()
  })

  test('accepts media at web addresses, as base64 data URLs, bare base64 and files by id', () => {
    const content = [
      { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      { type: 'image_url', image_url: { url: 'HTTP://example.com/a.png' } },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      { type: 'input_audio', input_audio: { data: 'UklGRiQ', format: 'wav' } },
      { type: 'input_audio', input_audio: { data: 'data:audio/wav;base64,UklGRiQ=', format: 'wav' } },
      { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } },
      { type: 'file', file: { file_data: 'JVBERi0x' } },
      { type: 'file', file: { file_id: 'file-1' } },
    ]

    expect(failure([{ role: 'user', content }])).toBeNull()
  })

  test.each([
    [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }, 'image_url.url'],
    [{ type: 'image_url', image_url: { url: 'example.com/a.png' } }, 'image_url.url'],
    [{ type: 'image_url', image_url: { url: 'data:image/png,%89PNG' } }, 'image_url.url'],
    [{ type: 'image_url', image_url: { url: 'data:image/png;base64' } }, 'image_url.url'],
    [{ type: 'image_url', image_url: { url: 'data:image/png;base64,not base64!' } }, 'image_url.url'],
    [{ type: 'image_url', image_url: { url: 'data:image/png;base64,' } }, 'image_url.url'],
    [{ type: 'input_audio', input_audio: { data: 'UklGRiQ=x', format: 'wav' } }, 'input_audio.data'],
    [{ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBER-_x' } }, 'file.file_data'],
  ])('refuses the media part %j as invalid_request naming its field', (part, field) => {
    const text = { type: 'text', text: 'Look:' }

    expect(failure([{ role: 'user', content: 'x' }, { role: 'user', content: [text, part] }])).toEqual({ code: 'invalid_request', param: `messages[1].content[1].${field}` })
  })

  test('isBase64 takes standard base64, padded or not, and nothing else', () => {
    expect(['QQ==', 'QUI=', 'QUJD', 'QQ', 'QUI', 'ab+/', Buffer.from('any bytes at all').toString('base64')].every(isBase64)).toBe(true)
    expect(['', '=', '==', 'Q', 'QQ=', 'Q===', 'QUJD=', 'QUJD QUJD', 'QUJD\n', 'ab-_', 'QQ==QQ=='].some(isBase64)).toBe(false)
  })

  test('refuses media over the limit before reading whether it is base64', () => {
    const part = { type: 'input_audio', input_audio: { data: '*'.repeat(6_700_000), format: 'wav' } }

    expect(failure([{ role: 'user', content: [part] }])).toEqual({ code: 'content_limit_exceeded', param: 'messages[0].content' })
  })

  test('leaves shapes it does not understand to the schema', () => {
    expect(failure('not an array')).toBeNull()
    expect(failure([null, 3])).toBeNull()
  })

  test('base64DecodedBytes accounts for padding', () => {
    expect([base64DecodedBytes('QQ=='), base64DecodedBytes('QUI='), base64DecodedBytes('QUJD')]).toEqual([1, 2, 3])
  })
})
