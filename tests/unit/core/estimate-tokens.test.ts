import { describe, expect, test } from 'bun:test'
import { estimatePromptTokens, estimateTextTokens, mediaPartTokens, messageOverheadTokens, replyPrimingTokens } from '../../../server/core/estimate-tokens'

describe('token estimator', () => {
  test('counts four characters a token for Latin text and two for Arabic script, rounding up', () => {
    expect(estimateTextTokens('')).toBe(0)
    expect(estimateTextTokens('abcd')).toBe(1)
    expect(estimateTextTokens('abcde')).toBe(2)
    expect(estimateTextTokens('مرحبا')).toBe(3)
    expect(estimateTextTokens('مر ab')).toBe(2)
  })

  test('counts a character outside the basic plane once', () => {
    expect(estimateTextTokens('😀😀😀😀')).toBe(1)
  })

  test('adds a fixed overhead per message, per reply and per media part', () => {
    const tokens = estimatePromptTokens([
      { role: 'system', content: 'abcd' },
      { role: 'user', content: [{ type: 'text', text: 'abcdefgh' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'abcd', arguments: '{}' } }] },
    ])

    expect(tokens).toBe(replyPrimingTokens + 3 * messageOverheadTokens + 1 + 2 + mediaPartTokens + 1 + 1)
  })
})
