import { describe, expect, test } from 'bun:test'
import { nestsDeeperThan } from '../../../server/http/request-body'

const bytes = (text: string) => new TextEncoder().encode(text)

/** The plain definition, one byte at a time: what the fast scan must agree with. */
function reference(input: Uint8Array, maxDepth: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < input.length; i++) {
    const byte = input[i]
    if (inString) {
      if (byte === 0x5c) i++
      else if (byte === 0x22) inString = false
    } else if (byte === 0x22) inString = true
    else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > maxDepth) return true
    } else if (byte === 0x7d || byte === 0x5d) depth--
  }
  return false
}

describe('nestsDeeperThan', () => {
  test('counts brackets outside strings only, escaped quotes and backslash runs included', () => {
    expect(nestsDeeperThan(bytes('[[[]]]'), 2)).toBe(true)
    expect(nestsDeeperThan(bytes('[[[]]]'), 3)).toBe(false)
    expect(nestsDeeperThan(bytes('{"a":"[[[[{{{{"}'), 1)).toBe(false)
    // \\" ends the string (the backslash is escaped); \" does not.
    expect(nestsDeeperThan(bytes('["\\\\", [[]]]'), 2)).toBe(true)
    expect(nestsDeeperThan(bytes('["\\", [[]]]'), 2)).toBe(false)
    expect(nestsDeeperThan(bytes('["\\\\\\"[[[", 1]'), 1)).toBe(false)
    expect(nestsDeeperThan(bytes('["never closed [[[['), 1)).toBe(false)
    expect(nestsDeeperThan(bytes('ذهب النيل ["مصر", [["ش"]]]'), 2)).toBe(true)
  })

  test('agrees with the byte-by-byte definition on random text of quotes, backslashes and brackets', () => {
    const alphabet = ['"', '\\', '[', ']', '{', '}', 'a', ',', ':', ' ', 'é']
    let seed = 11
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648)
    for (let run = 0; run < 20_000; run++) {
      const length = 1 + Math.floor(random() * 40)
      const text = Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')
      const maxDepth = Math.floor(random() * 4)
      const input = bytes(text)
      if (nestsDeeperThan(input, maxDepth) !== reference(input, maxDepth)) throw new Error(`disagree on ${JSON.stringify(text)} at depth ${maxDepth}`)
    }
  })
})
