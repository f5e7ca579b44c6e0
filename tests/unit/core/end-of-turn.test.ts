import { describe, expect, test } from 'bun:test'
import { endOfTurn } from '../../../server/core/end-of-turn'

describe('endOfTurn', () => {
  test('resolves the callers of one turn together, in order, after the turn and the immediates queued before them', async () => {
    const order: string[] = []
    setImmediate(() => order.push('queued before'))

    const turn = Promise.all(['a', 'b', 'c'].map((name) => endOfTurn().then(() => order.push(name))))
    await Promise.resolve()
    order.push('rest of the turn')
    await turn

    expect(order).toEqual(['rest of the turn', 'queued before', 'a', 'b', 'c'])
  })

  test('a caller after a release waits for a turn of its own', async () => {
    const order: string[] = []

    const first = endOfTurn().then(() => order.push('first'))
    await first
    setImmediate(() => order.push('queued between'))
    await endOfTurn().then(() => order.push('second'))

    expect(order).toEqual(['first', 'queued between', 'second'])
  })
})
