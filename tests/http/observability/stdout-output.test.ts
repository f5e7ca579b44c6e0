import { describe, expect, test } from 'bun:test'
import { stdoutOutput } from '../../../server/observability/logger'

/** A file sink that keeps what it is given, each write as a piece. */
function recordingSink() {
  const writes: string[] = []
  let flushes = 0
  return {
    writes,
    flushes: () => flushes,
    sink: {
      write(text: string | ArrayBufferView | ArrayBuffer | SharedArrayBuffer) {
        writes.push(String(text))
        return String(text).length
      },
      flush() {
        flushes++
        return 0
      },
    },
  }
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe('the standard output of the gateway', () => {
  test('gives the sink the lines of one turn of the event loop as one write, in order, at the end of the turn', async () => {
    const { writes, sink, flushes } = recordingSink()
    const output = stdoutOutput(sink)

    output.write('{"n":1}\n')
    output.write('{"n":2}\n')
    output.write('{"n":3}\n')
    const beforeTheTurnEnds = [...writes]
    await nextTurn()

    expect({ beforeTheTurnEnds, writes, flushes: flushes() }).toEqual({ beforeTheTurnEnds: [], writes: ['{"n":1}\n{"n":2}\n{"n":3}\n'], flushes: 1 })
  })

  test('writes each turn apart, and nothing for a turn without lines', async () => {
    const { writes, sink } = recordingSink()
    const output = stdoutOutput(sink)

    output.write('a\n')
    await nextTurn()
    await nextTurn()
    output.write('b\n')
    output.write('c\n')
    await nextTurn()

    expect(writes).toEqual(['a\n', 'b\nc\n'])
  })

  test('flush writes what is waiting at once, and the turn then writes it no second time', async () => {
    const { writes, sink } = recordingSink()
    const output = stdoutOutput(sink)

    output.write('last words\n')
    await output.flush()
    const afterFlush = [...writes]
    await nextTurn()

    expect({ afterFlush, writes }).toEqual({ afterFlush: ['last words\n'], writes: ['last words\n'] })
  })
})
