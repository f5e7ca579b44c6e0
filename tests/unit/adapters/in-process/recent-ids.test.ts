import { describe, expect, test } from 'bun:test'
import { RecentIds } from '../../../../server/adapters/in-process/recent-ids'

describe('RecentIds', () => {
  test('remembers an id for at least the retention, and forgets it before twice that', () => {
    const ids = new RecentIds(1_000)
    const remembered = (id: string, nowMs: number) => !ids.remember(id, nowMs)
    expect([ids.remember('req_a', 0), ids.remember('req_b', 999)]).toEqual([true, true])

    expect([remembered('req_a', 999), remembered('req_b', 999)]).toEqual([true, true])
    expect([remembered('req_a', 1_999), remembered('req_b', 1_999)]).toEqual([true, true])
    expect([remembered('req_a', 2_000), remembered('req_b', 2_000)]).toEqual([false, false])
  })

  test('after a quiet period, nothing from before it is remembered', () => {
    const ids = new RecentIds(1_000)
    ids.remember('req_a', 900)
    ids.remember('req_b', 2_500)

    expect(ids.remember('req_a', 2_500)).toBe(true)
    expect(ids.remember('req_b', 3_400)).toBe(false)
  })

  test('a clock that steps back forgets nothing', () => {
    const ids = new RecentIds(1_000)
    ids.remember('req_a', 5_500)

    expect(ids.remember('req_a', 3_000)).toBe(false)
    expect(ids.remember('req_a', 6_999)).toBe(false)
  })

  test('tells apart ids that differ in one character, across a hundred thousand of them', () => {
    const ids = new RecentIds(60_000)
    for (let index = 0; index < 100_000; index++) ids.remember(`req_0123456789abcdef${index.toString(36).padStart(8, '0')}`, 0)
    expect(ids.size).toBe(100_000)

    const strangers = Array.from({ length: 100_000 }, (_, index) => `req_0123456789abcdeg${index.toString(36).padStart(8, '0')}`)
    expect(strangers.filter((id) => !ids.remember(id, 1))).toEqual([])
    expect(ids.remember('req_0123456789abcdef00000000', 1)).toBe(false)
  })

  test('keeps every id through the growth of its table and across a period, with none but the remembered known', () => {
    const ids = new RecentIds(1_000)
    const id = (period: number, index: number) => `req_${period}_${index.toString(36).padStart(8, '0')}`
    // 300,000 ids in one period outgrow the first table many times; the next period's table starts
    // at their size, and holds as many again.
    for (let index = 0; index < 300_000; index++) ids.remember(id(0, index), 10)
    for (let index = 0; index < 300_000; index++) ids.remember(id(1, index), 1_010)

    expect(ids.size).toBe(600_000)
    const forgotten = (period: number, nowMs: number) => Array.from({ length: 300_000 }, (_, index) => index).filter((index) => ids.remember(id(period, index), nowMs))
    expect([forgotten(0, 1_500), forgotten(1, 1_500)]).toEqual([[], []])
    expect(Array.from({ length: 1_000 }, (_, index) => ids.remember(id(2, index), 1_500)).every(Boolean)).toBe(true)
  })
})
