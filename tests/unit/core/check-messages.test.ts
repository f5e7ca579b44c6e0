import { describe, expect, test } from 'bun:test'
import type { GatewayError } from '@nilegate/shared/errors'
import { base64DecodedBytes, checkMessages } from '../../../server/core/check-messages'

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

  test('leaves shapes it does not understand to the schema', () => {
    expect(failure('not an array')).toBeNull()
    expect(failure([null, 3])).toBeNull()
  })

  test('base64DecodedBytes accounts for padding', () => {
    expect([base64DecodedBytes('QQ=='), base64DecodedBytes('QUI='), base64DecodedBytes('QUJD')]).toEqual([1, 2, 3])
  })
})
