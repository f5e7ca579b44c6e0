import { describe, expect, test } from 'bun:test'
import { createUsageRepository, type KeyLastUsed } from '../../../../server/adapters/postgres/usage-repository'
import { usageEvent } from '../../../support/usage-events'

const t0 = Date.now()
const at = (keyId: string, offsetMs: number) => usageEvent({ keyId, createdAt: new Date(t0 + offsetMs) })

/** A repository over a writer that records the keys each batch asked to move, and fails on demand. */
function recordingRepository() {
  const batches: KeyLastUsed[][] = []
  let failNext = false
  const repository = createUsageRepository(async (_events, lastUsed) => {
    if (failNext) {
      failNext = false
      throw new Error('the database is away')
    }
    batches.push(lastUsed)
  })
  return { repository, batches, failNextWrite: () => (failNext = true) }
}

const moved = (lastUsed: KeyLastUsed[] | undefined) => lastUsed?.map(([keyId, usedAt]) => [keyId, usedAt.getTime() - t0])

describe("a usage batch moves a key's last use", () => {
  test("to the key's newest event, once for each key", async () => {
    const { repository, batches } = recordingRepository()
    await repository.insertUsageEvents([at('key_a', 0), at('key_b', 5), at('key_a', 20), at('key_a', 10)])
    expect(moved(batches[0])).toEqual([['key_a', 20], ['key_b', 5]])
  })

  test('not again until its events are a minute newer than what was written', async () => {
    const { repository, batches } = recordingRepository()
    await repository.insertUsageEvents([at('key_a', 0), at('key_b', 0)])
    await repository.insertUsageEvents([at('key_a', 59_000), at('key_b', 60_001)])
    await repository.insertUsageEvents([at('key_a', 60_001)])
    expect(batches.map(moved)).toEqual([[['key_a', 0], ['key_b', 0]], [['key_b', 60_001]], [['key_a', 60_001]]])
  })

  test('again after a write that failed', async () => {
    const { repository, batches, failNextWrite } = recordingRepository()
    failNextWrite()
    await expect(repository.insertUsageEvents([at('key_a', 0)])).rejects.toThrow('away')
    await repository.insertUsageEvents([at('key_a', 1)])
    expect(batches.map(moved)).toEqual([[['key_a', 1]]])
  })

  test('an empty batch writes nothing', async () => {
    const { repository, batches } = recordingRepository()
    await repository.insertUsageEvents([])
    expect(batches).toEqual([])
  })
})
