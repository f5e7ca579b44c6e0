import { describe, expect, test } from 'bun:test'
import { SseDecoder } from '../../../../server/adapters/providers/sse-decoder'

const encode = (text: string) => new TextEncoder().encode(text)

function decodeInPieces(bytes: Uint8Array, cuts: number[]): string[] {
  const decoder = new SseDecoder()
  const events: string[] = []
  let from = 0
  for (const cut of [...cuts, bytes.length]) {
    events.push(...decoder.push(bytes.slice(from, cut)))
    from = cut
  }
  events.push(...decoder.end())
  return events
}

describe('SseDecoder', () => {
  const stream = [
    ': keep-alive\r\n\r\n',
    'data: {"a":1}\r\n\r\n',
    'data: {"text":"مرحبا"}\r\r',
    'event: message\nid: 3\nretry: 10\ndata: first line\ndata: second line\n\n',
    // A \r\n split between two reads is one line end: read as two, it would end the event early.
    'data: one\r\ndata: two\r\n\r\n',
    'data:{"tight":true}\n\n',
    // A field named data alone is an empty data line; other fields that begin with data are not data.
    'data\ndata: after an empty line\ndatabase: no\ndata-x: no\n\n',
    'data: [DONE]\n\n',
  ].join('')
  const expected = ['{"a":1}', '{"text":"مرحبا"}', 'first line\nsecond line', 'one\ntwo', '{"tight":true}', '\nafter an empty line', '[DONE]']

  test('returns the data of each event, ignoring comments and other fields', () => {
    expect(decodeInPieces(encode(stream), [])).toEqual(expected)
  })

  test('gives the same events wherever the bytes are split, once or twice', () => {
    const bytes = encode(stream)

    for (let first = 1; first < bytes.length; first++) {
      expect(decodeInPieces(bytes, [first])).toEqual(expected)
      const second = Math.min(bytes.length, first + 1 + (first % 7))
      expect(decodeInPieces(bytes, [first, second])).toEqual(expected)
    }
  })

  test('gives the same events when fed one byte at a time', () => {
    const bytes = encode(stream)

    expect(decodeInPieces(bytes, Array.from({ length: bytes.length - 1 }, (_, index) => index + 1))).toEqual(expected)
  })

  test('returns an event cut off by the end of the stream', () => {
    const decoder = new SseDecoder()

    const events = [...decoder.push(encode('data: {"a":1}\n\ndata: [DONE]')), ...decoder.end()]

    expect(events).toEqual(['{"a":1}', '[DONE]'])
  })

  test('returns nothing for a stream of comments and blank lines', () => {
    expect(decodeInPieces(encode(': ping\n\n\n\r\n: ping\n\n'), [3])).toEqual([])
  })

  test('counts what it holds of an event not complete yet, and lets it go once the event is out', () => {
    const decoder = new SseDecoder()

    decoder.push(encode('data: abc\ndata: de'))
    const held = decoder.buffered
    const events = decoder.push(encode('f\n\n'))

    // 'abc' of the first data line, and the 8 characters of 'data: de' read so far.
    expect([held, events, decoder.buffered]).toEqual([11, ['abc\ndef'], 0])
  })

  test('reads a long line that arrives in many pieces', () => {
    const line = `data: ${'x'.repeat(200_000)}\n\n`

    expect(decodeInPieces(encode(line), Array.from({ length: 199 }, (_, index) => (index + 1) * 1_000))).toEqual(['x'.repeat(200_000)])
  })
})
