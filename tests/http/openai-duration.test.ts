import { describe, expect, test } from 'bun:test'
import { openAiDuration } from '../../server/http/openai-duration'

describe('openAiDuration: Go durations, as OpenAI writes x-ratelimit-reset-*', () => {
  test.each([
    [0, '0s'],
    [-5, '0s'],
    [0.4, '1ms'],
    [12, '12ms'],
    [999, '999ms'],
    [1_000, '1s'],
    [17_200, '17.2s'],
    [44_750, '44.75s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [90_500, '1m30.5s'],
    [360_000, '6m0s'],
    [3_600_000, '1h0m0s'],
    [3_661_001, '1h1m1.001s'],
  ])('%p ms is %p', (ms, written) => {
    expect(openAiDuration(ms)).toBe(written)
  })
})
