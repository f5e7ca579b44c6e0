import { describe, expect, test } from 'bun:test'
import { ArrivalWindow } from '../../../../server/adapters/in-process/admission-store'

/** The times a window holds, oldest first. */
function contents(window: ArrivalWindow): number[] {
  return Array.from({ length: window.length }, (_, index) => window.at(index))
}

describe('ArrivalWindow', () => {
  test('keeps the times in order and drops those at or before the cutoff', () => {
    const window = new ArrivalWindow()
    for (const at of [10, 20, 30, 25]) window.insert(at)

    expect(contents(window)).toEqual([10, 20, 25, 30])
    window.dropUntil(20)
    expect(contents(window)).toEqual([25, 30])
    window.insert(22)
    expect(contents(window)).toEqual([22, 25, 30])
    window.dropUntil(30)
    expect(window.length).toBe(0)
  })

  test('matches a plain sorted list over a long run of arrivals, late ones and expiries', () => {
    const window = new ArrivalWindow()
    const model: number[] = []
    let seed = 7
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648)
    let nowMs = 0
    for (let step = 0; step < 50_000; step++) {
      nowMs += random() * 3
      // One arrival in twenty comes from a clock a little behind.
      const at = random() < 0.05 ? nowMs - random() * 50 : nowMs
      const cutoff = nowMs - 1_000
      window.dropUntil(cutoff)
      while (model.length > 0 && model[0]! <= cutoff) model.shift()
      window.insert(at)
      model.splice(model.findLastIndex((time) => time <= at) + 1, 0, at)
      if (step % 997 === 0) expect(contents(window)).toEqual(model)
    }
    expect(contents(window)).toEqual(model)
    expect(window.length).toBeGreaterThan(500)
  })
})
