import { describe, expect, test } from 'bun:test'
import { RecentIds } from '../../../../server/adapters/in-process/recent-ids'

describe('RecentIds', () => {
  test('remembers an id for at least the retention, and forgets it before twice that', () => {
    const ids = new RecentIds(1_000)
    ids.add('req_a', 0)
    ids.add('req_b', 999)

    expect([ids.has('req_a', 999), ids.has('req_b', 999)]).toEqual([true, true])
    expect([ids.has('req_a', 1_999), ids.has('req_b', 1_999)]).toEqual([true, true])
    expect([ids.has('req_a', 2_000), ids.has('req_b', 2_000)]).toEqual([false, false])
  })

  test('after a quiet period, nothing from before it is remembered', () => {
    const ids = new RecentIds(1_000)
    ids.add('req_a', 900)
    ids.add('req_b', 2_500)

    expect(ids.has('req_a', 2_500)).toBe(false)
    expect(ids.has('req_b', 3_400)).toBe(true)
  })

  test('a clock that steps back forgets nothing', () => {
    const ids = new RecentIds(1_000)
    ids.add('req_a', 5_500)

    expect(ids.has('req_a', 3_000)).toBe(true)
    expect(ids.has('req_a', 6_999)).toBe(true)
  })

  test('tells apart ids that differ in one character, across a hundred thousand of them', () => {
    const ids = new RecentIds(60_000)
    for (let index = 0; index < 100_000; index++) ids.add(`req_0123456789abcdef${index.toString(36).padStart(8, '0')}`, 0)

    const strangers = Array.from({ length: 100_000 }, (_, index) => `req_0123456789abcdeg${index.toString(36).padStart(8, '0')}`)
    expect(strangers.filter((id) => ids.has(id, 1))).toEqual([])
    expect(ids.has('req_0123456789abcdef00000000', 1)).toBe(true)
    expect(ids.size).toBe(100_000)
  })
})
