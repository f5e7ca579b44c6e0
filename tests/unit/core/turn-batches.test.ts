import { describe, expect, test } from 'bun:test'
import { TurnBatches, TurnEnd } from '../../../server/core/turn-batches'

describe('TurnBatches', () => {
  test('sends the calls of one turn together, one send per group of at most perCall, and answers each with its reply', async () => {
    const sends: string[][] = []
    const batches = new TurnBatches<string, string>(2, async (items) => {
      sends.push(items)
      return items.map((item) => item.toUpperCase())
    })

    const replies = await Promise.all([batches.add('a', 'a1'), batches.add('b', 'b1'), batches.add('a', 'a2'), batches.add('a', 'a3')])
    const later = await batches.add('a', 'a4')

    expect(replies).toEqual(['A1', 'B1', 'A2', 'A3'])
    expect(later).toBe('A4')
    expect(sends).toEqual([['a1', 'a2'], ['a3'], ['b1'], ['a4']])
  })

  test('a send that fails, or answers the wrong number of replies, fails the calls it carried and no others', async () => {
    const batches = new TurnBatches<string, string>(10, async (items) => {
      if (items.includes('bad')) throw new Error('unreachable')
      if (items.includes('short')) return []
      return items
    })

    const outcomes = await Promise.all(
      [batches.add('x', 'bad'), batches.add('x', 'with the bad one'), batches.add('y', 'fine'), batches.add('z', 'short')].map((reply) =>
        reply.then(
          (value) => `ok ${value}`,
          (error: Error) => `failed: ${error.message}`,
        ),
      ),
    )

    expect(outcomes).toEqual(['failed: unreachable', 'failed: unreachable', 'ok fine', 'failed: 0 replies for 1 calls'])
  })
})

describe('TurnEnd', () => {
  test('runs what a turn deferred in one setImmediate, in order, after beforeEnd ran once; what those defer waits for the next', async () => {
    const events: string[] = []
    const turn = new TurnEnd(() => events.push('before end'))

    turn.defer(() => events.push('first'))
    turn.defer(() => {
      events.push('second')
      turn.defer(() => events.push('next turn'))
    })
    events.push('still in the turn')
    await new Promise((resolve) => setImmediate(resolve))
    expect(events).toEqual(['before end', 'still in the turn', 'first', 'second', 'before end'])

    await new Promise((resolve) => setImmediate(resolve))
    expect(events).toEqual(['before end', 'still in the turn', 'first', 'second', 'before end', 'next turn'])
  })

  test('batchers sharing a turn send in the same setImmediate, each once however many calls it got', async () => {
    const sent: string[] = []
    let ends = 0
    const turn = new TurnEnd(() => ends++)
    const echo = (name: string) => async (items: string[]) => {
      sent.push(`${name}: ${items.join(' ')}`)
      return items
    }
    const admissions = new TurnBatches<string, string>(10, echo('admit'), turn)
    const settlements = new TurnBatches<string, string>(10, echo('settle'), turn)

    await Promise.all([admissions.add('org', 'a1'), settlements.add('org', 's1'), admissions.add('org', 'a2')])

    expect(sent).toEqual(['admit: a1 a2', 'settle: s1'])
    expect(ends).toBe(1)
  })

  test('a beforeEnd that throws delays nothing: the calls of the turn are sent and answered', async () => {
    const turn = new TurnEnd(() => {
      throw new Error('not connected')
    })
    const batches = new TurnBatches<string, string>(10, async (items) => items, turn)

    expect(await Promise.all([batches.add('org', 'a'), batches.add('org', 'b')])).toEqual(['a', 'b'])
  })
})
