import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import type { AdmissionStore, SettleResult, Settlement } from '../../../server/core/admission'
import { Settlements, type SettlementEnd } from '../../../server/core/settlements'
import { admitRequest, newOrgId, orgCounters, settlementOf } from '../../support/admission-requests'

/** A store whose settle answers (or throws) what `answers` says, one entry per call, then `settled`. */
function scriptedStore(answers: Array<SettleResult['outcome'] | Error>): { store: AdmissionStore; calls: Settlement[] } {
  const calls: Settlement[] = []
  const store = Object.assign(new InProcessAdmissionStore(), {
    settle: async (settlement: Settlement): Promise<SettleResult> => {
      calls.push(settlement)
      const answer = answers.shift() ?? 'settled'
      if (answer instanceof Error) throw answer
      return { outcome: answer, debitedMicros: 0n, releasedMicros: 0n }
    },
  })
  return { store, calls }
}

function settlement(): Settlement {
  return settlementOf(admitRequest({ orgId: newOrgId() }), { month: '202501' })
}

/** Settles one settlement and resolves with how it ended and the log. */
async function settleOnce(store: AdmissionStore, options: ConstructorParameters<typeof Settlements>[1] = {}): Promise<{ end: SettlementEnd; logged: string[] }> {
  const logged: string[] = []
  const settlements = new Settlements(store, { retryMs: 1, maxRetryMs: 4, log: (message) => logged.push(message), ...options })
  const end = await new Promise<SettlementEnd>((resolve) => settlements.settle(settlement(), resolve))
  return { end, logged }
}

describe('Settlements', () => {
  test('calls back only once the store has answered, with its answer', async () => {
    const store = new InProcessAdmissionStore()
    const request = admitRequest({ orgId: newOrgId() })
    await store.load(request.orgId, orgCounters(10_000n))
    const admitted = await store.admit(request)
    const settlements = new Settlements(store)
    const seen: Array<[SettlementEnd, bigint | undefined]> = []

    const ended = new Promise<void>((resolve) =>
      settlements.settle(settlementOf(request, admitted as { month: string }, { costMicros: 400n }), async (end) => {
        seen.push([end, (await store.snapshot(request.orgId, '202501'))?.balanceMicros])
        resolve()
      }),
    )
    const onCallersStack = seen.length
    await ended

    expect(onCallersStack).toBe(0)
    expect(seen).toEqual([['settled', 9_600n]])
  })

  test('sends a settlement again while a rebuild reads the ledger or the store is unreachable, until it is answered', async () => {
    const { store, calls } = scriptedStore(['loading', new GatewayError('service_unavailable'), 'loading', 'pending'])

    const { end, logged } = await settleOnce(store)

    expect(end).toBe('pending')
    expect(calls.length).toBe(4)
    expect(new Set(calls.map((call) => call.requestId)).size).toBe(1)
    expect(logged).toEqual([])
  })

  test('does not repeat a settlement the store refuses as malformed', async () => {
    const { store, calls } = scriptedStore([new RangeError('costMicros must be between 0 and 2^53 - 1')])

    const { end, logged } = await settleOnce(store)

    expect([end, calls.length]).toEqual(['failed', 1])
    expect(logged.length).toBe(1)
  })

  test('gives up after its retry period, logs it, and still calls back', async () => {
    const { store, calls } = scriptedStore(Array(1_000).fill(new GatewayError('service_unavailable')))

    const { end, logged } = await settleOnce(store, { retryForMs: 30 })

    expect(end).toBe('failed')
    expect(calls.length).toBeGreaterThan(1)
    expect(logged.length).toBe(1)
    expect(logged[0]).toContain('failed for 30 ms')
  })

  test('drain waits for every settlement in progress, retries included', async () => {
    const { store } = scriptedStore(['loading', 'loading', 'loading'])
    const settlements = new Settlements(store, { retryMs: 5, log: () => {} })
    const ends: SettlementEnd[] = []
    for (let i = 0; i < 3; i++) settlements.settle(settlement(), (end) => ends.push(end))

    expect(settlements.pending).toBe(3)
    await settlements.drain()

    expect(ends).toEqual(['settled', 'settled', 'settled'])
    expect(settlements.pending).toBe(0)
  })

  test('a callback that throws is logged, and leaves nothing pending', async () => {
    const logged: string[] = []
    const settlements = new Settlements(scriptedStore([]).store, { log: (message) => logged.push(message) })

    settlements.settle(settlement(), () => {
      throw new Error('queue closed')
    })
    await settlements.drain()

    expect(logged.length).toBe(1)
    expect(settlements.pending).toBe(0)
  })
})
