import { describe, expect, test } from 'bun:test'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import type { LateUsage } from '../../../server/core/admission'
import { defaultTimeouts } from '../../../server/core/catalog'
import { LateUsageFollowUp, lateRowWaitMs, lookbackFor, type LedgerLoad } from '../../../server/core/late-usage'
import { orgCounters } from '../../support/admission-requests'

const load: LedgerLoad = { orgId: 'org_late', month: '202501', timeZone: 'Africa/Cairo', snapshot: '10:12:', readAtMs: 1_736_935_200_000, loadToken: 'fence_1' }

/** A store whose counters for `load.orgId` a rebuild loaded, and that load with its fence token. */
async function rebuiltStore(balanceMicros: bigint) {
  const store = new InProcessAdmissionStore()
  const fence = await store.beginLoad(load.orgId, load.readAtMs)
  await store.finishLoad(load.orgId, orgCounters(balanceMicros), fence!, [], load.readAtMs)
  return { store, load: { ...load, loadToken: fence!.token } }
}

/** A ledger that answers the given rows and notes what it was asked. */
function ledgerOf(rows: LateUsage[]) {
  const asked: Array<{ sinceMs: number; untilMs: number }> = []
  return {
    asked,
    async readUsageAfter(_orgId: string, _snapshot: string, sinceMs: number, untilMs: number): Promise<LateUsage[]> {
      asked.push({ sinceMs, untilMs })
      return rows
    },
  }
}

describe('LateUsageFollowUp', () => {
  test('asks for the rows created from the lookback before the read to the clock skew after it, and has the store debit them', async () => {
    const { store, load: rebuilt } = await rebuiltStore(1_000n)
    const ledger = ledgerOf([{ requestId: 'req_late', keyId: 'key_a', projectId: 'proj_a', month: '202501', costMicros: 40n }])
    const logged: string[] = []
    const followUp = new LateUsageFollowUp(store, ledger, { afterMs: [], lookbackMs: 60_000, clockSkewMs: 2_000, now: () => load.readAtMs + 5_000, log: (message) => logged.push(message) })

    const applied = await followUp.pass(rebuilt)

    expect(ledger.asked).toEqual([{ sinceMs: load.readAtMs - 60_000, untilMs: load.readAtMs + 2_000 }])
    expect(applied).toEqual({ applied: 1, debitedMicros: 40n })
    expect((await store.snapshot(load.orgId, '202501'))!.balanceMicros).toBe(960n)
    expect(logged).toEqual(['admission: org_late: 1 usage rows of requests settled before its counters were rebuilt reached the ledger after the rebuild read it; debited 40 micro-EGP'])
  })

  test('looks back as far as the longest request plus the wait of its row: the default total deadline when not told, or what a function answers at each look', async () => {
    const ledger = ledgerOf([])
    let longestMs = 120_000
    const byDefault = new LateUsageFollowUp(new InProcessAdmissionStore(), ledger, { afterMs: [] })
    const following = new LateUsageFollowUp(new InProcessAdmissionStore(), ledger, { afterMs: [], lookbackMs: () => lookbackFor(longestMs) })

    await byDefault.pass(load)
    await following.pass(load)
    longestMs = 1_800_000
    await following.pass(load)

    expect(ledger.asked.map(({ sinceMs }) => load.readAtMs - sinceMs)).toEqual([defaultTimeouts.totalMs + lateRowWaitMs, 120_000 + lateRowWaitMs, 1_800_000 + lateRowWaitMs])
  })

  test('does not call the store when no row came late, and logs nothing', async () => {
    const store = new InProcessAdmissionStore()
    const logged: string[] = []
    const followUp = new LateUsageFollowUp(store, ledgerOf([]), { afterMs: [], log: (message) => logged.push(message) })

    expect(await followUp.pass(load)).toEqual({ applied: 0, debitedMicros: 0n })
    expect(logged).toEqual([])
  })

  test('stop() cancels the looks still to come', async () => {
    const ledger = ledgerOf([])
    const followUp = new LateUsageFollowUp(new InProcessAdmissionStore(), ledger, { afterMs: [10_000, 20_000] })

    followUp.follow(load)
    const scheduled = followUp.outstanding
    await followUp.stop()
    followUp.follow(load)

    expect(scheduled).toBe(2)
    expect(followUp.outstanding).toBe(0)
    expect(ledger.asked).toEqual([])
  })

  test('refuses a look later than the settled retention, after which settled requests could be debited again', () => {
    expect(() => new LateUsageFollowUp(new InProcessAdmissionStore(), ledgerOf([]), { afterMs: [5_000, 60_000] })).toThrow(RangeError)
  })
})
