import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { maxMicros, type AdmissionStore, type AdmitRequest, type AdmitResult, type LateUsage, type OrgSnapshot } from '../../server/core/admission'
import { admitRequest, midJanuaryMs, newOrgId, orgCounters, settlementOf } from './admission-requests'

/** Two gateways' views of the same counters (for a single-process store, the same store twice). */
export interface AdmissionStores {
  stores: [AdmissionStore, AdmissionStore]
  close(): Promise<void>
}

/**
 * The behaviour every AdmissionStore has: one suite, run against each store. Each test works on
 * its own organization; concurrent calls alternate between the two gateways.
 */
/**
 * `leases`: the stores admit a key's requests under leases (the Redis store's `leaseMs`), where a
 * request's money is a share of its lease's hold, which outlives the lease by the request's TTL.
 * The tests of when single holds expire are then left to the lease tests, and a request settled
 * through a gateway that did not admit it keeps its share held until the lease's hold expires.
 */
export function describeAdmissionStore(name: string, open: () => Promise<AdmissionStores>, { leases = false } = {}): void {
  const singleHoldsTest = leases ? test.skip : test
  describe(`${name} conforms to AdmissionStore`, () => {
    let opened: AdmissionStores | undefined
    const gateways = (): [AdmissionStore, AdmissionStore] => opened!.stores
    const store = (): AdmissionStore => opened!.stores[0]

    beforeAll(async () => {
      opened = await open()
    })
    afterAll(async () => {
      await opened?.close()
    })

    /** A loaded organization and a request factory bound to it. */
    async function organization(balanceMicros: bigint, counters: Parameters<typeof orgCounters>[1] = {}) {
      const orgId = newOrgId()
      await store().load(orgId, orgCounters(balanceMicros, counters))
      return { orgId, request: (overrides: Partial<AdmitRequest> = {}) => admitRequest({ orgId, ...overrides }) }
    }

    async function admitted(request: AdmitRequest, on: AdmissionStore = store()) {
      const result = await on.admit(request)
      if (!result.admitted) throw new Error(`expected ${request.requestId} to be admitted, got ${JSON.stringify(result)}`)
      return result
    }

    /** Admits every request at once, alternating between the two gateways. */
    function admitTogether(requests: AdmitRequest[]): Promise<AdmitResult[]> {
      return Promise.all(requests.map((request, i) => gateways()[i % 2]!.admit(request)))
    }

    async function snapshot(orgId: string, month = '202501'): Promise<OrgSnapshot> {
      const taken = await store().snapshot(orgId, month)
      if (!taken) throw new Error(`${orgId} is not loaded`)
      return taken
    }

    function reasons(results: AdmitResult[]): Record<string, number> {
      const counts: Record<string, number> = {}
      for (const result of results) {
        const reason = result.admitted ? 'admitted' : result.reason
        counts[reason] = (counts[reason] ?? 0) + 1
      }
      return counts
    }

    /** The held totals agree with the open holds, and no hold outgrows the balance. */
    function expectHoldsConsistent(taken: OrgSnapshot): void {
      const sum = taken.reservations.reduce((total, hold) => total + hold.amountMicros, 0n)
      expect(taken.heldMicros).toBe(sum)
      expect(taken.heldMicros <= (taken.balanceMicros > 0n ? taken.balanceMicros : 0n)).toBe(true)
    }

    describe('loading', () => {
      test('answers not_loaded until the counters are loaded, and keeps a settlement that arrives meanwhile', async () => {
        const orgId = newOrgId()
        const request = admitRequest({ orgId })

        const before = await store().admit(request)
        const settled = await store().settle(settlementOf(request, { month: '202501' }))
        const repeated = await gateways()[1].settle(settlementOf(request, { month: '202501' }))
        const loaded = await store().load(orgId, orgCounters(5_000n))
        const after = await store().admit(request)

        expect(before).toEqual({ admitted: false, reason: 'not_loaded' })
        expect(settled).toEqual({ outcome: 'pending', debitedMicros: 0n, releasedMicros: 0n })
        expect(repeated.outcome).toBe('already_settled')
        expect(await store().snapshot(newOrgId(), '202501')).toBeNull()
        expect(loaded).toBe(true)
        expect(after.admitted).toBe(true)
        // A plain load sets the counters as given: the kept settlement is forgotten, not applied.
        expect((await snapshot(orgId)).balanceMicros).toBe(5_000n)
      })

      test('replaces the balance and the month spends but keeps open holds', async () => {
        const { orgId, request } = await organization(10_000n, { keySpend: new Map([['key_a', 300n]]) })
        await admitted(request({ worstCaseMicros: 1_000n }))

        const replaced = await gateways()[1].load(orgId, orgCounters(8_000n, { keySpend: new Map([['key_b', 50n]]), projectSpend: new Map([['proj_a', 50n]]) }))

        expect(replaced).toBe(true)
        const taken = await snapshot(orgId)
        expect({ balance: taken.balanceMicros, held: taken.heldMicros, keySpend: taken.keySpend, projectSpend: taken.projectSpend, keyHeld: taken.keyHeld }).toEqual({
          balance: 8_000n,
          held: 1_000n,
          keySpend: new Map([['key_b', 50n]]),
          projectSpend: new Map([['proj_a', 50n]]),
          keyHeld: new Map([['key_a', 1_000n]]),
        })
      })

      test('refuses a request id it admitted before', async () => {
        const { request } = await organization(10_000n)
        const first = request()
        await admitted(first)

        await expect(store().admit(first)).rejects.toThrow('admitted before')
      })
    })

    describe('rebuild', () => {
      const nowMs = midJanuaryMs + 5_000

      test('begins only for absent counters; two rebuilders share one fence and the first to finish loads', async () => {
        const { orgId: loadedOrg } = await organization(1_000n)
        const orgId = newOrgId()

        const none = await store().beginLoad(loadedOrg, nowMs)
        const first = await store().beginLoad(orgId, nowMs)
        const second = await gateways()[1].beginLoad(orgId, nowMs)
        const finished = [await gateways()[1].finishLoad(orgId, orgCounters(700n), second!, [], nowMs), await store().finishLoad(orgId, orgCounters(1n), first!, [], nowMs)]

        expect(none).toBeNull()
        expect(second).toEqual(first)
        expect(first!.keptIds).toEqual([])
        expect(finished).toEqual([true, false])
        expect((await snapshot(orgId)).balanceMicros).toBe(700n)
        expect(await store().beginLoad(orgId, nowMs)).toBeNull()
      })

      test('applies the kept settlements whose usage rows the ledger read lacked, and only those, exactly once', async () => {
        const orgId = newOrgId()
        const [inRead, afterRead, unpriced, lastMonth] = [admitRequest({ orgId }), admitRequest({ orgId, keyId: 'key_b' }), admitRequest({ orgId, worstCaseMicros: 0n }), admitRequest({ orgId })]
        const settlements = [
          settlementOf(inRead, { month: '202501' }, { costMicros: 300n }),
          settlementOf(afterRead, { month: '202501' }, { costMicros: 40n }),
          settlementOf(unpriced, { month: '202501' }, { costMicros: 0n }),
          settlementOf(lastMonth, { month: '202412' }, { costMicros: 5n }),
        ]
        const kept = await Promise.all(settlements.map((settlement, i) => gateways()[i % 2]!.settle(settlement)))

        const fence = await store().beginLoad(orgId, nowMs)
        // The ledger read counted the first request's row (300 of the spend and the balance), not the others.
        const loaded = await gateways()[1].finishLoad(orgId, orgCounters(10_000n, { keySpend: new Map([['key_a', 300n]]), projectSpend: new Map([['proj_a', 300n]]) }), fence!, [inRead.requestId], nowMs)
        const replays = await Promise.all(settlements.map((settlement) => store().settle({ ...settlement, nowMs })))

        expect(kept.map((result) => result.outcome)).toEqual(['pending', 'pending', 'pending', 'pending'])
        expect([...fence!.keptIds].sort()).toEqual(settlements.map((settlement) => settlement.requestId).sort())
        expect(loaded).toBe(true)
        expect(replays.map((result) => result.outcome)).toEqual(['already_settled', 'already_settled', 'already_settled', 'already_settled'])
        const taken = await snapshot(orgId)
        // 10,000 - 40 - 5; last month's settlement lowers the balance but not this month's spends.
        expect({ balance: taken.balanceMicros, keySpend: taken.keySpend, projectSpend: taken.projectSpend }).toEqual({
          balance: 9_955n,
          keySpend: new Map([['key_a', 300n], ['key_b', 40n]]),
          projectSpend: new Map([['proj_a', 340n]]),
        })
        expect(await store().beginLoad(orgId, nowMs)).toBeNull()
      })

      test('makes a settlement that arrives while the ledger is read wait, then settles it once against the loaded counters', async () => {
        const orgId = newOrgId()
        const request = admitRequest({ orgId })
        const fence = await store().beginLoad(orgId, nowMs)

        const during = await gateways()[1].settle(settlementOf(request, { month: '202501' }, { costMicros: 250n, nowMs }))
        const loaded = await store().finishLoad(orgId, orgCounters(1_000n), fence!, [], nowMs)
        const after = await gateways()[1].settle(settlementOf(request, { month: '202501' }, { costMicros: 250n, nowMs }))
        const again = await store().settle(settlementOf(request, { month: '202501' }, { costMicros: 250n, nowMs }))

        expect(during).toEqual({ outcome: 'loading', debitedMicros: 0n, releasedMicros: 0n })
        expect(loaded).toBe(true)
        expect([after.outcome, again.outcome]).toEqual(['settled_unreserved', 'already_settled'])
        expect((await snapshot(orgId)).balanceMicros).toBe(750n)
      })

      test('a credit during the ledger read takes the fence away: that rebuild writes nothing, the next one loads', async () => {
        const orgId = newOrgId()
        const fence = await store().beginLoad(orgId, nowMs)

        const credited = await gateways()[1].credit(orgId, 500n)
        const stale = await store().finishLoad(orgId, orgCounters(1_000n), fence!, [], nowMs)
        const snapshotAfterStale = await store().snapshot(orgId, '202501')
        const again = await store().beginLoad(orgId, nowMs)
        const loaded = await store().finishLoad(orgId, orgCounters(1_500n), again!, [], nowMs)

        expect([credited, stale, snapshotAfterStale]).toEqual(['not_loaded', false, null])
        expect(again!.token).not.toBe(fence!.token)
        expect(loaded).toBe(true)
        expect((await snapshot(orgId)).balanceMicros).toBe(1_500n)
      })

      test('keeps at most one settlement per request id while the counters are absent, however many gateways send it', async () => {
        const orgId = newOrgId()
        const requests = Array.from({ length: 100 }, () => admitRequest({ orgId }))
        const outcomes = await Promise.all(requests.flatMap((request) => [0, 1].map((i) => gateways()[i]!.settle(settlementOf(request, { month: '202501' }, { costMicros: 7n })))))

        const fence = await store().beginLoad(orgId, nowMs)
        await store().finishLoad(orgId, orgCounters(10_000n), fence!, [], nowMs)

        expect(reasonsOf(outcomes.map((result) => result.outcome))).toEqual({ pending: 100, already_settled: 100 })
        expect(fence!.keptIds.length).toBe(100)
        expect((await snapshot(orgId)).balanceMicros).toBe(10_000n - 700n)
      })
    })

    describe('late usage rows', () => {
      const nowMs = midJanuaryMs + 5_000
      const late = (requestId: string, costMicros: bigint, overrides: Partial<LateUsage> = {}): LateUsage => ({ requestId, keyId: 'key_a', projectId: 'proj_a', month: '202501', costMicros, ...overrides })

      /** An organization whose counters a rebuild loaded, and that rebuild's fence token. */
      async function rebuilt(balanceMicros: bigint, orgId = newOrgId()) {
        const fence = await store().beginLoad(orgId, nowMs)
        expect(await store().finishLoad(orgId, orgCounters(balanceMicros), fence!, [], nowMs)).toBe(true)
        return { orgId, token: fence!.token, request: (overrides: Partial<AdmitRequest> = {}) => admitRequest({ orgId, ...overrides }) }
      }

      test('debits the rows whose requests these counters have not settled, exactly once, with spends of the loaded month only', async () => {
        const { orgId, token, request } = await rebuilt(1_000n)
        const settledHere = request()
        await admitted(settledHere)
        await store().settle(settlementOf(settledHere, { month: '202501' }, { costMicros: 100n }))
        const rows = [
          late(settledHere.requestId, 100n),
          late('req_late_b', 50n, { keyId: 'key_b' }),
          late('req_late_c', 5n, { month: '202412' }),
          late('req_late_d', 0n),
        ]

        const first = await store().applyLate(orgId, '202501', rows, nowMs, token)
        const repeat = await gateways()[1].applyLate(orgId, '202501', rows, nowMs, token)
        const lateSettle = await store().settle({ requestId: 'req_late_b', orgId, keyId: 'key_b', projectId: 'proj_a', month: '202501', costMicros: 50n, nowMs })

        expect(first).toEqual({ applied: 3, debitedMicros: 55n })
        expect(repeat).toEqual({ applied: 0, debitedMicros: 0n })
        expect(lateSettle.outcome).toBe('already_settled')
        const taken = await snapshot(orgId)
        expect({ balance: taken.balanceMicros, keySpend: taken.keySpend, projectSpend: taken.projectSpend }).toEqual({
          balance: 845n,
          keySpend: new Map([['key_a', 100n], ['key_b', 50n]]),
          projectSpend: new Map([['proj_a', 150n]]),
        })
      })

      test('skips the settlements a rebuild kept and applied', async () => {
        const orgId = newOrgId()
        const kept = admitRequest({ orgId })
        await store().settle(settlementOf(kept, { month: '202501' }, { costMicros: 30n }))
        const fence = await store().beginLoad(orgId, nowMs)
        await store().finishLoad(orgId, orgCounters(1_000n), fence!, [], nowMs)

        const applied = await gateways()[1].applyLate(orgId, '202501', [late(kept.requestId, 30n)], nowMs, fence!.token)

        expect(applied).toEqual({ applied: 0, debitedMicros: 0n })
        expect((await snapshot(orgId)).balanceMicros).toBe(970n)
      })

      test('leaves counters alone that another rebuild loaded, that a repair replaced, or that are absent: null, nothing written', async () => {
        // The rows are late for an earlier rebuild's read; these counters were rebuilt since (another fence).
        const earlier = await rebuilt(1_000n)
        const since = await rebuilt(1_000n)
        const repaired = await rebuilt(1_000n)
        await store().load(repaired.orgId, orgCounters(900n))
        const absentOrg = newOrgId()
        const rows = [late('req_counted_since', 40n)]

        const answers = await Promise.all([
          store().applyLate(since.orgId, '202501', rows, nowMs, earlier.token),
          gateways()[1].applyLate(repaired.orgId, '202501', rows, nowMs, repaired.token),
          store().applyLate(absentOrg, '202501', rows, nowMs, earlier.token),
        ])

        expect(answers).toEqual([null, null, null])
        expect((await snapshot(since.orgId)).balanceMicros).toBe(1_000n)
        expect((await snapshot(repaired.orgId)).balanceMicros).toBe(900n)
        expect(await store().snapshot(absentOrg, '202501')).toBeNull()
      })

      test('applies a thousand rows at once', async () => {
        const { orgId, token } = await rebuilt(1_000_000n)
        const rows = Array.from({ length: 1_200 }, (_, i) => late(`req_many_${i}`, 3n))

        const applied = await store().applyLate(orgId, '202501', rows, nowMs, token)

        expect(applied).toEqual({ applied: 1_200, debitedMicros: 3_600n })
        expect((await snapshot(orgId)).balanceMicros).toBe(1_000_000n - 3_600n)
      })

      test('refuses a row it cannot hold exactly, writing nothing', async () => {
        const { orgId, token } = await rebuilt(1_000n)

        const refusals = await Promise.all([
          store().applyLate(orgId, '202501', [late('req_ok', 1n), late('bad id', 1n)], nowMs, token).catch((error: Error) => error.name),
          store().applyLate(orgId, '202501', [late('req_big', maxMicros + 1n)], nowMs, token).catch((error: Error) => error.name),
        ])

        expect(refusals).toEqual(['RangeError', 'RangeError'])
        expect((await snapshot(orgId)).balanceMicros).toBe(1_000n)
      })
    })

    describe('reconciling', () => {
      const startMs = midJanuaryMs
      const untilMs = midJanuaryMs + 60_000

      /** Admits and settles a request at `costMicros`, on `on`. */
      async function settled(orgId: string, costMicros: bigint, on: AdmissionStore = store(), overrides: Partial<AdmitRequest> = {}) {
        const request = admitRequest({ orgId, ...overrides })
        await admitted(request, on)
        await on.settle(settlementOf(request, { month: '202501' }, { costMicros }))
        return request.requestId
      }

      async function watchedSnapshot(orgId: string, watch: string | null, nowMs = startMs + 5_000) {
        const taken = await gateways()[1].watchedSnapshot(orgId, '202501', watch!, nowMs)
        if (!taken) throw new Error(`no watched snapshot of ${orgId}`)
        return taken
      }

      test('a watch records the requests settled, and the late rows applied, from its start to the snapshot, read with the counters at one instant', async () => {
        const orgId = newOrgId()
        const fence = await store().beginLoad(orgId, startMs)
        await store().finishLoad(orgId, orgCounters(10_000n), fence!, [], startMs)
        await settled(orgId, 100n)

        const watch = await store().watchSettled(orgId, startMs, untilMs)
        const during = [await settled(orgId, 200n), await settled(orgId, 300n, gateways()[1], { keyId: 'key_b' })]
        await gateways()[1].applyLate(orgId, '202501', [{ requestId: 'req_late_watched', keyId: 'key_a', projectId: 'proj_a', month: '202501', costMicros: 5n }], startMs + 2_000, fence!.token)
        const taken = await watchedSnapshot(orgId, watch)

        expect(taken.settledIds.sort()).toEqual([...during, 'req_late_watched'].sort())
        expect([taken.balanceMicros, taken.keySpend]).toEqual([10_000n - 605n, new Map([['key_a', 305n], ['key_b', 300n]])])
        expect(taken.revision).not.toBe('')
      })

      test('a watch begun while another runs joins it until the later end; its snapshot ends it, and so does its time', async () => {
        const { orgId } = await organization(10_000n)
        const first = await store().watchSettled(orgId, startMs, startMs + 5_000)
        const joined = await gateways()[1].watchSettled(orgId, startMs + 100, untilMs)
        const id = await settled(orgId, 10n)

        const whileJoined = await watchedSnapshot(orgId, first, startMs + 30_000)
        const again = await store().watchedSnapshot(orgId, '202501', first!, startMs + 30_001)
        const next = await store().watchSettled(orgId, startMs + 30_002, startMs + 40_000)
        const fresh = await watchedSnapshot(orgId, next, startMs + 30_003)
        const timed = await store().watchSettled(orgId, startMs + 30_004, startMs + 40_000)
        const late = await store().watchedSnapshot(orgId, '202501', timed!, startMs + 40_000)

        expect(joined).toBe(first)
        expect(whileJoined.settledIds).toEqual([id])
        expect(again).toBeNull()
        expect(next).not.toBe(first)
        expect(fresh.settledIds).toEqual([])
        expect(late).toBeNull()
      })

      test('a credit or a load ends a watch (the ledger read and the snapshot would straddle it); absent counters have none', async () => {
        const credited = await organization(10_000n)
        const loaded = await organization(10_000n)
        const credit = await store().watchSettled(credited.orgId, startMs, untilMs)
        const load = await store().watchSettled(loaded.orgId, startMs, untilMs)

        await gateways()[1].credit(credited.orgId, 1n)
        await gateways()[1].load(loaded.orgId, orgCounters(5_000n))

        expect(await store().watchedSnapshot(credited.orgId, '202501', credit!, startMs + 1)).toBeNull()
        expect(await store().watchedSnapshot(loaded.orgId, '202501', load!, startMs + 1)).toBeNull()
        expect(await store().watchSettled(newOrgId(), startMs, untilMs)).toBeNull()
      })

      test('adjust adds to the balance and the month spends, keeping what settled since the snapshot', async () => {
        const { orgId } = await organization(1_000n, { keySpend: new Map([['key_a', 100n]]), projectSpend: new Map([['proj_a', 100n]]) })
        const taken = await watchedSnapshot(orgId, await store().watchSettled(orgId, startMs, untilMs))
        await settled(orgId, 50n)

        const adjusted = await gateways()[1].adjust(orgId, taken.revision, {
          month: '202501',
          balanceMicros: -200n,
          keySpend: new Map([['key_a', 30n], ['key_b', 20n]]),
          projectSpend: new Map([['proj_a', -100n]]),
        })

        expect(adjusted).toBe(true)
        const after = await snapshot(orgId)
        expect([after.balanceMicros, after.keySpend, after.projectSpend]).toEqual([750n, new Map([['key_a', 180n], ['key_b', 20n]]), new Map([['proj_a', 50n]])])
      })

      test('rebuilds and repairs the month spends of 10,000 keys and 10,000 projects at once', async () => {
        const orgId = newOrgId()
        const spends = (prefix: string, amount: (i: number) => bigint) => new Map(Array.from({ length: 10_000 }, (_, i) => [`${prefix}_${i}`, amount(i)]))
        const fence = await store().beginLoad(orgId, startMs)
        const loaded = await store().finishLoad(orgId, orgCounters(1_000_000n, { keySpend: spends('key', (i) => BigInt(i + 1)), projectSpend: spends('proj', () => 5n) }), fence!, [], startMs)
        const taken = await watchedSnapshot(orgId, await store().watchSettled(orgId, startMs, untilMs))

        // Every key's spend up by one, every project's down to zero (a field the repair deletes).
        const adjusted = await gateways()[1].adjust(orgId, taken.revision, { month: '202501', balanceMicros: 0n, keySpend: spends('key', () => 1n), projectSpend: spends('proj', () => -5n) })

        expect([loaded, taken.keySpend.size, taken.projectSpend.size, adjusted]).toEqual([true, 10_000, 10_000, true])
        const after = await snapshot(orgId)
        expect([after.keySpend.size, after.keySpend.get('key_0'), after.keySpend.get('key_9999'), after.projectSpend.size]).toEqual([10_000, 2n, 10_001n, 0])
      })

      test('adjusts once per look: of two repairs from one snapshot on two gateways one applies; none after a load, or on absent counters', async () => {
        const { orgId } = await organization(1_000n)
        const taken = await watchedSnapshot(orgId, await store().watchSettled(orgId, startMs, untilMs))
        const change = orgCounters(-100n)
        const stale = await organization(1_000n)
        const staleLook = await watchedSnapshot(stale.orgId, await store().watchSettled(stale.orgId, startMs, untilMs))
        await store().load(stale.orgId, orgCounters(2_000n))

        const both = await Promise.all(gateways().map((gateway) => gateway.adjust(orgId, taken.revision, change)))
        const afterLoad = await store().adjust(stale.orgId, staleLook.revision, change)
        const absent = await store().adjust(newOrgId(), taken.revision, change)

        expect(both.sort()).toEqual([false, true])
        expect((await snapshot(orgId)).balanceMicros).toBe(900n)
        expect([afterLoad, absent]).toEqual([false, false])
        expect((await snapshot(stale.orgId)).balanceMicros).toBe(2_000n)
      })

      test('a credit, or late rows applied, after the look make its repair write nothing: the ledger read may have counted them; a settlement does not', async () => {
        const credited = await organization(1_000n)
        const creditLook = await watchedSnapshot(credited.orgId, await store().watchSettled(credited.orgId, startMs, untilMs))
        const orgId = newOrgId()
        const fence = await store().beginLoad(orgId, startMs)
        await store().finishLoad(orgId, orgCounters(1_000n), fence!, [], startMs)
        const lateLook = await watchedSnapshot(orgId, await store().watchSettled(orgId, startMs, untilMs))
        const settledOrg = await organization(1_000n)
        const settledLook = await watchedSnapshot(settledOrg.orgId, await store().watchSettled(settledOrg.orgId, startMs, untilMs))

        await gateways()[1].credit(credited.orgId, 40n)
        await gateways()[1].applyLate(orgId, '202501', [{ requestId: 'req_late_after_look', keyId: 'key_a', projectId: 'proj_a', month: '202501', costMicros: 40n }], startMs, fence!.token)
        await settled(settledOrg.orgId, 40n, gateways()[1])
        const repairs = await Promise.all([
          store().adjust(credited.orgId, creditLook.revision, orgCounters(40n)),
          store().adjust(orgId, lateLook.revision, orgCounters(-40n)),
          store().adjust(settledOrg.orgId, settledLook.revision, orgCounters(-5n)),
        ])

        expect(repairs).toEqual([false, false, true])
        expect([(await snapshot(credited.orgId)).balanceMicros, (await snapshot(orgId)).balanceMicros, (await snapshot(settledOrg.orgId)).balanceMicros]).toEqual([1_040n, 960n, 955n])
      })

      test('refuses a change that would take a spend below zero or the balance out of range, writing nothing', async () => {
        const { orgId } = await organization(maxMicros - 10n, { keySpend: new Map([['key_a', 100n]]) })
        const taken = await watchedSnapshot(orgId, await store().watchSettled(orgId, startMs, untilMs))

        const refusals = await Promise.all([
          store().adjust(orgId, taken.revision, orgCounters(0n, { keySpend: new Map([['key_a', -101n]]) })).catch((error: Error) => error.name),
          store().adjust(orgId, taken.revision, orgCounters(11n)).catch((error: Error) => error.name),
          store().adjust(orgId, taken.revision, orgCounters(0n, { projectSpend: new Map([['bad id', 1n]]) })).catch((error: Error) => error.name),
        ])

        expect(refusals).toEqual(['RangeError', 'RangeError', 'RangeError'])
        const after = await snapshot(orgId)
        expect([after.balanceMicros, after.keySpend]).toEqual([maxMicros - 10n, new Map([['key_a', 100n]])])
        expect(await store().adjust(orgId, taken.revision, orgCounters(10n))).toBe(true)
      })

      test('adjusted counters are no rebuild\'s: rows late for its read are not applied on top of the repair', async () => {
        const orgId = newOrgId()
        const fence = await store().beginLoad(orgId, startMs)
        await store().finishLoad(orgId, orgCounters(1_000n), fence!, [], startMs)
        const taken = await watchedSnapshot(orgId, await store().watchSettled(orgId, startMs, untilMs))

        await store().adjust(orgId, taken.revision, orgCounters(-40n))
        const late = await store().applyLate(orgId, '202501', [{ requestId: 'req_late_repaired', keyId: 'key_a', projectId: 'proj_a', month: '202501', costMicros: 40n }], startMs, fence!.token)

        expect(late).toBeNull()
        expect((await snapshot(orgId)).balanceMicros).toBe(960n)
      })
    })

    describe('rate window', () => {
      test('admits rpmLimit requests in 60 s and refuses the next until the oldest leaves', async () => {
        const { request } = await organization(1_000_000n)
        const t0 = midJanuaryMs

        const firstFive = []
        for (let i = 0; i < 5; i++) firstFive.push(await store().admit(request({ rpmLimit: 5, nowMs: t0 + i * 10_000 })))
        const sixth = await store().admit(request({ rpmLimit: 5, nowMs: t0 + 50_000 }))
        const retriedInCooldown = await store().admit(request({ rpmLimit: 5, nowMs: t0 + 59_999 }))
        const afterOldestLeft = await store().admit(request({ rpmLimit: 5, nowMs: t0 + 60_000 }))

        expect(firstFive.map((result) => (result.admitted ? [result.limit, result.remaining] : result))).toEqual([[5, 4], [5, 3], [5, 2], [5, 1], [5, 0]])
        expect(sixth).toEqual({ admitted: false, reason: 'rate_limit_exceeded', limit: 5, retryAfterS: 10 })
        expect(retriedInCooldown).toEqual({ admitted: false, reason: 'rate_limit_exceeded', limit: 5, retryAfterS: 1 })
        expect(afterOldestLeft).toMatchObject({ admitted: true, limit: 5, remaining: 0 })
      })

      test('rounds Retry-After up to whole seconds', async () => {
        const { request } = await organization(1_000_000n)
        await admitted(request({ rpmLimit: 1, nowMs: midJanuaryMs + 1 }))

        const refused = await store().admit(request({ rpmLimit: 1, nowMs: midJanuaryMs + 30_000 }))

        expect(refused).toMatchObject({ reason: 'rate_limit_exceeded', retryAfterS: 31 })
      })

      test('never admits 2N across a minute boundary', async () => {
        const { request } = await organization(1_000_000n)
        const boundary = Date.UTC(2025, 0, 15, 10, 1, 0)

        const before = await admitTogether(Array.from({ length: 10 }, () => request({ rpmLimit: 10, nowMs: boundary - 1 })))
        const after = await admitTogether(Array.from({ length: 10 }, () => request({ rpmLimit: 10, nowMs: boundary + 1 })))
        const minuteLater = await admitTogether(Array.from({ length: 10 }, () => request({ rpmLimit: 10, nowMs: boundary - 1 + 60_000 })))

        expect(reasons(before)).toEqual({ admitted: 10 })
        expect(after).toEqual(Array.from({ length: 10 }, () => ({ admitted: false, reason: 'rate_limit_exceeded', limit: 10, retryAfterS: 60 })))
        expect(reasons(minuteLater)).toEqual({ admitted: 10 })
      })

      test('slides: each admission leaves exactly 60 s after it was made', async () => {
        const { request } = await organization(1_000_000n)
        const t0 = midJanuaryMs
        const at = (offsetS: number) => store().admit(request({ rpmLimit: 3, nowMs: t0 + offsetS * 1_000 }))

        const timeline = [await at(0), await at(20), await at(40), await at(50), await at(60), await at(70), await at(80), await at(99)]

        expect(timeline.map((result) => (result.admitted ? 'admitted' : result.reason === 'rate_limit_exceeded' ? `retry ${result.retryAfterS}` : result.reason))).toEqual([
          'admitted',
          'admitted',
          'admitted',
          'retry 10',
          'admitted',
          'retry 10',
          'admitted',
          'retry 1',
        ])
      })

      test('tells each admission how long until the oldest request of its window leaves it and a place frees up', async () => {
        const { request } = await organization(1_000_000n)
        const t0 = midJanuaryMs
        const at = (offsetMs: number, keyId = 'key_a') => admitted(request({ rpmLimit: 3, keyId, nowMs: t0 + offsetMs }))

        const timeline = [await at(0), await at(20_000), await at(45_500), await at(60_000), await at(60_250, 'key_b')]

        expect(timeline.map(({ remaining, resetMs }) => ({ remaining, resetMs }))).toEqual([
          // Alone in its window: it frees its own place a minute later.
          { remaining: 2, resetMs: 60_000 },
          { remaining: 1, resetMs: 40_000 },
          { remaining: 0, resetMs: 14_500 },
          // The first left at +60 s: the one of +20 s is now the oldest.
          { remaining: 0, resetMs: 20_000 },
          { remaining: 2, resetMs: 60_000 },
        ])
      })

      test('applies a lowered limit at once, waiting for enough admissions to leave', async () => {
        const { request } = await organization(1_000_000n)
        for (let i = 0; i < 5; i++) await admitted(request({ rpmLimit: 10, nowMs: midJanuaryMs + i * 1_000 }))

        const refused = await store().admit(request({ rpmLimit: 2, nowMs: midJanuaryMs + 5_000 }))

        // Four must leave for a fifth to fit under 2; the fourth (at +3 s) leaves at +63 s.
        expect(refused).toEqual({ admitted: false, reason: 'rate_limit_exceeded', limit: 2, retryAfterS: 58 })
      })

      test('keeps one window per key: keys of one organization do not pool', async () => {
        const { request } = await organization(1_000_000n)
        await admitted(request({ rpmLimit: 1 }))

        const sameKey = await store().admit(request({ rpmLimit: 1 }))
        const otherKey = await store().admit(request({ rpmLimit: 1, keyId: 'key_b' }))

        expect([sameKey.admitted, otherKey.admitted]).toEqual([false, true])
      })

      test('admits exactly rpmLimit of 500 concurrent requests on one key', async () => {
        const { request } = await organization(1_000_000_000n)

        const results = await admitTogether(Array.from({ length: 500 }, () => request({ rpmLimit: 100, worstCaseMicros: 1n })))

        expect(reasons(results)).toEqual({ admitted: 100, rate_limit_exceeded: 400 })
        expect(new Set(results.flatMap((result) => (result.admitted ? [result.remaining] : []))).size).toBe(100)
      })
    })

    describe('money', () => {
      test('answers quota_exceeded at a zero or negative balance, insufficient_balance when the worst case exceeds what is not held', async () => {
        const empty = await organization(0n)
        const overdrawn = await organization(-5n)
        const small = await organization(1_500n)
        await admitted(small.request({ worstCaseMicros: 1_000n }))

        const results = [await store().admit(empty.request()), await store().admit(overdrawn.request()), await store().admit(small.request({ worstCaseMicros: 1_000n })), await store().admit(small.request({ worstCaseMicros: 500n }))]

        expect(results.map((result) => (result.admitted ? 'admitted' : result.reason))).toEqual(['quota_exceeded', 'quota_exceeded', 'insufficient_balance', 'admitted'])
      })

      test('refuses at the key cap and at the project cap, counting settled spend and open holds of the month', async () => {
        const { request } = await organization(1_000_000n, { keySpend: new Map([['key_a', 8_000n]]), projectSpend: new Map([['proj_a', 8_000n]]) })
        await admitted(request({ keyCapMicros: 10_000n, worstCaseMicros: 1_500n }))

        const overKeyCap = await store().admit(request({ keyCapMicros: 10_000n, worstCaseMicros: 501n }))
        const atKeyCap = await store().admit(request({ keyCapMicros: 10_000n, worstCaseMicros: 500n }))
        const overProjectCap = await store().admit(request({ keyId: 'key_b', projectCapMicros: 10_000n, worstCaseMicros: 1n }))

        expect([overKeyCap, atKeyCap.admitted, overProjectCap]).toEqual([
          { admitted: false, reason: 'spending_cap_reached', capMicros: 10_000n },
          true,
          { admitted: false, reason: 'project_spend_cap_exceeded', capMicros: 10_000n },
        ])
      })

      test('checks rate limit, then balance, then key cap, then project cap', async () => {
        const broke = await organization(0n)
        await admitted(broke.request({ rpmLimit: 1, worstCaseMicros: 0n }))
        const capped = await organization(1_000_000n)

        const results = [
          await store().admit(broke.request({ rpmLimit: 1, keyCapMicros: 0n, projectCapMicros: 0n })),
          await store().admit(broke.request({ keyId: 'key_b', keyCapMicros: 0n, projectCapMicros: 0n })),
          await store().admit(capped.request({ keyCapMicros: 0n, projectCapMicros: 0n })),
          await store().admit(capped.request({ keyCapMicros: null, projectCapMicros: 0n })),
        ]

        expect(results.map((result) => (result.admitted ? 'admitted' : result.reason))).toEqual(['rate_limit_exceeded', 'quota_exceeded', 'spending_cap_reached', 'project_spend_cap_exceeded'])
      })

      test('never refuses an unpriced request for money', async () => {
        const { request } = await organization(0n)

        const result = await store().admit(request({ worstCaseMicros: 0n, keyCapMicros: 0n, projectCapMicros: 0n }))

        expect(result.admitted).toBe(true)
      })

      test('records nothing on a refusal: no hold, no place in the window', async () => {
        const { orgId, request } = await organization(0n)
        const before = await snapshot(orgId)

        const refusals = [await store().admit(request({ rpmLimit: 1 })), await store().admit(request({ rpmLimit: 1 }))]
        const after = await snapshot(orgId)
        await store().load(orgId, orgCounters(10_000n))
        const once = await store().admit(request({ rpmLimit: 1 }))

        expect(refusals.map((result) => !result.admitted && result.reason)).toEqual(['quota_exceeded', 'quota_exceeded'])
        expect(after).toEqual(before)
        expect(once.admitted).toBe(true)
      })

      test('of 500 concurrent admits against a balance covering exactly K worst cases, admits exactly K', async () => {
        const { orgId, request } = await organization(137n * 1_000n)

        const results = await admitTogether(Array.from({ length: 500 }, () => request({ worstCaseMicros: 1_000n })))

        expect(reasons(results)).toEqual({ admitted: 137, insufficient_balance: 363 })
        const taken = await snapshot(orgId)
        expect(taken.heldMicros).toBe(137_000n)
        expectHoldsConsistent(taken)
      })

      test('of 500 concurrent admits against a key cap covering exactly K worst cases, admits exactly K', async () => {
        const { orgId, request } = await organization(1_000_000_000n, { keySpend: new Map([['key_a', 500n]]) })

        const results = await admitTogether(Array.from({ length: 500 }, () => request({ worstCaseMicros: 1_000n, keyCapMicros: 500n + 73n * 1_000n })))

        expect(reasons(results)).toEqual({ admitted: 73, spending_cap_reached: 427 })
        expect((await snapshot(orgId)).keyHeld).toEqual(new Map([['key_a', 73_000n]]))
      })

      test('of 500 concurrent admits from five keys against a project cap covering exactly K worst cases, admits exactly K', async () => {
        const { orgId, request } = await organization(1_000_000_000n)

        const results = await admitTogether(Array.from({ length: 500 }, (_, i) => request({ keyId: `key_${i % 5}`, worstCaseMicros: 1_000n, projectCapMicros: 91n * 1_000n })))

        expect(reasons(results)).toEqual({ admitted: 91, project_spend_cap_exceeded: 409 })
        expect((await snapshot(orgId)).projectHeld).toEqual(new Map([['proj_a', 91_000n]]))
      })

      test('keeps a balance of 2^53 - 1 uEGP exact', async () => {
        const { orgId, request } = await organization(maxMicros)
        const big = request({ worstCaseMicros: maxMicros - 1n })
        const bigAdmission = await admitted(big)

        const tooMuch = await store().admit(request({ worstCaseMicros: 2n }))
        const lastMicro = await store().admit(request({ worstCaseMicros: 1n }))
        await store().settle(settlementOf(big, bigAdmission, { costMicros: maxMicros - 3n }))

        expect([tooMuch, lastMicro.admitted]).toEqual([{ admitted: false, reason: 'insufficient_balance' }, true])
        const taken = await snapshot(orgId)
        expect([taken.balanceMicros, taken.heldMicros, taken.keySpend.get('key_a')]).toEqual([3n, 1n, maxMicros - 3n])
      })

      test('keeps a cap of 2^53 - 1 uEGP exact, and refuses amounts above it', async () => {
        const { orgId, request } = await organization(maxMicros, { keySpend: new Map([['key_a', maxMicros - 5n]]) })

        const results = [await store().admit(request({ keyCapMicros: maxMicros, worstCaseMicros: 6n })), await store().admit(request({ keyCapMicros: maxMicros, worstCaseMicros: 5n }))]

        expect(results.map((result) => result.admitted)).toEqual([false, true])
        await expect(store().admit(request({ worstCaseMicros: maxMicros + 1n }))).rejects.toThrow(RangeError)
        await expect(store().load(orgId, orgCounters(maxMicros + 1n))).rejects.toThrow(RangeError)
      })
    })

    describe('settle', () => {
      test('releases the hold and debits a cheaper actual cost, so the difference is available again; a replay changes nothing', async () => {
        const { orgId, request } = await organization(10_000n)
        const first = request({ worstCaseMicros: 4_000n })
        const admission = await admitted(first)

        const settled = await store().settle(settlementOf(first, admission, { costMicros: 1_500n }))
        const afterSettle = await snapshot(orgId)
        const replays = [await store().settle(settlementOf(first, admission, { costMicros: 1_500n })), await gateways()[1].settle(settlementOf(first, admission, { costMicros: 9_999n }))]

        expect(settled).toEqual({ outcome: 'settled', debitedMicros: 1_500n, releasedMicros: 4_000n })
        expect(replays).toEqual([
          { outcome: 'already_settled', debitedMicros: 0n, releasedMicros: 0n },
          { outcome: 'already_settled', debitedMicros: 0n, releasedMicros: 0n },
        ])
        expect(await snapshot(orgId)).toEqual(afterSettle)
        expect(afterSettle).toEqual({
          month: '202501',
          balanceMicros: 8_500n,
          heldMicros: 0n,
          keySpend: new Map([['key_a', 1_500n]]),
          projectSpend: new Map([['proj_a', 1_500n]]),
          keyHeld: new Map(),
          projectHeld: new Map(),
          reservations: [],
        })
        expect((await store().admit(request({ worstCaseMicros: 8_500n }))).admitted).toBe(true)
      })

      test('debits a cost above the hold in full, even below zero, and then answers quota_exceeded', async () => {
        const { orgId, request } = await organization(1_200n)
        const first = request({ worstCaseMicros: 1_000n })
        const admission = await admitted(first)

        const settled = await store().settle(settlementOf(first, admission, { costMicros: 1_500n }))
        const next = await store().admit(request({ worstCaseMicros: 1n }))

        expect(settled).toEqual({ outcome: 'settled', debitedMicros: 1_500n, releasedMicros: 1_000n })
        expect((await snapshot(orgId)).balanceMicros).toBe(-300n)
        expect(next).toEqual({ admitted: false, reason: 'quota_exceeded' })
      })

      test('debits a request it holds nothing for (counters rebuilt since admission) exactly once', async () => {
        const { orgId, request } = await organization(10_000n)
        const unknown = request()

        const outcomes = [await store().settle(settlementOf(unknown, { month: '202501' }, { costMicros: 700n })), await store().settle(settlementOf(unknown, { month: '202501' }, { costMicros: 700n }))]

        expect(outcomes.map((result) => result.outcome)).toEqual(['settled_unreserved', 'already_settled'])
        expect((await snapshot(orgId)).balanceMicros).toBe(9_300n)
      })

      test('releases the hold where it was counted when settled under another key, and bills the key it names', async () => {
        const { orgId, request } = await organization(10_000n)
        const mislabelled = request({ keyId: 'key_a', worstCaseMicros: 2_000n })
        const admission = await admitted(mislabelled)

        const settled = await store().settle(settlementOf(mislabelled, admission, { keyId: 'key_b', costMicros: 600n }))

        expect(settled).toEqual({ outcome: 'settled', debitedMicros: 600n, releasedMicros: 2_000n })
        const taken = await snapshot(orgId)
        expect([taken.balanceMicros, taken.heldMicros, taken.keyHeld, taken.projectHeld, taken.keySpend]).toEqual([9_400n, 0n, new Map(), new Map(), new Map([['key_b', 600n]])])
      })

      test('settles an unpriced request, holding and debiting nothing', async () => {
        const { orgId, request } = await organization(0n)
        const free = request({ worstCaseMicros: 0n })
        const admission = await admitted(free)

        const settled = await store().settle(settlementOf(free, admission, { costMicros: 0n }))

        expect(settled).toEqual({ outcome: 'settled', debitedMicros: 0n, releasedMicros: 0n })
        const taken = await snapshot(orgId)
        expect([taken.balanceMicros, taken.heldMicros, taken.keySpend, taken.keyHeld, taken.reservations]).toEqual([0n, 0n, new Map(), new Map(), []])
      })

      test('of concurrent settles, each sent twice to two gateways, debits each request exactly once', async () => {
        const { orgId, request } = await organization(10_000_000n)
        const requests = Array.from({ length: 300 }, () => request({ worstCaseMicros: 10_000n, keyId: `key_${Math.floor(Math.random() * 3)}` }))
        const admissions = await admitTogether(requests)
        const costs = requests.map(() => BigInt(Math.floor(Math.random() * 10_001)))

        const settlements = await Promise.all(
          requests.flatMap((one, i) => [0, 1].map((copy) => gateways()[(i + copy) % 2]!.settle(settlementOf(one, admissions[i] as { month: string }, { costMicros: costs[i]! })))),
        )

        const total = costs.reduce((sum, cost) => sum + cost, 0n)
        const outcomes = reasonsOf(settlements.map((result) => result.outcome))
        if (leases) {
          // Settled through the other gateway first, a leased request's share stays held until its lease's hold expires.
          expect([outcomes.already_settled, (outcomes.settled ?? 0) + (outcomes.settled_unreserved ?? 0)]).toEqual([300, 300])
          await store().releaseExpired(orgId, midJanuaryMs + 24 * 60 * 60_000)
        } else {
          expect(outcomes).toEqual({ settled: 300, already_settled: 300 })
        }
        const taken = await snapshot(orgId)
        expect([taken.balanceMicros, taken.heldMicros, [...taken.keySpend.values()].reduce((a, b) => a + b, 0n), taken.projectSpend.get('proj_a')]).toEqual([10_000_000n - total, 0n, total, total])
      })
    })

    describe('expiry', () => {
      test('releases an expired hold inside the next admission, so a dead gateway does not block spending', async () => {
        const { orgId, request } = await organization(3_000n)
        const t0 = midJanuaryMs
        const orphans = [request({ nowMs: t0, reservationTtlMs: 5_000 }), request({ nowMs: t0, reservationTtlMs: 5_000 }), request({ nowMs: t0, reservationTtlMs: 9_000 })]
        for (const orphan of orphans) await admitted(orphan)

        const whileHeld = await store().admit(request({ nowMs: t0 + 4_999 }))
        const afterTwoExpired = await store().admit(request({ nowMs: t0 + 5_000, worstCaseMicros: 2_000n }))

        expect(whileHeld).toEqual({ admitted: false, reason: 'insufficient_balance' })
        expect(afterTwoExpired.admitted).toBe(true)
        const taken = await snapshot(orgId)
        expect(taken.reservations.map((hold) => hold.amountMicros).sort()).toEqual([1_000n, 2_000n])
        expectHoldsConsistent(taken)
      })

      singleHoldsTest('releases a hold that expires before those already open, unpriced ones too', async () => {
        const { orgId, request } = await organization(10_000n)
        await admitted(request({ reservationTtlMs: 60_000 }))
        await admitted(request({ worstCaseMicros: 0n, reservationTtlMs: 2_000 }))
        await admitted(request({ reservationTtlMs: 5_000 }))

        const released = [await store().releaseExpired(orgId, midJanuaryMs + 1_999), await store().releaseExpired(orgId, midJanuaryMs + 2_000), await store().releaseExpired(orgId, midJanuaryMs + 5_000)]

        expect(released).toEqual([0, 1, 1])
        const taken = await snapshot(orgId)
        expect(taken.reservations.map((hold) => hold.expiresAtMs)).toEqual([midJanuaryMs + 60_000])
        expectHoldsConsistent(taken)
      })

      test('a snapshot at an instant leaves out the holds expired by then, with no admission or sweep to release them', async () => {
        const { orgId, request } = await organization(10_000n)
        await admitted(request({ worstCaseMicros: 4_000n, reservationTtlMs: 1_000 }))
        await admitted(request({ keyId: 'key_b', projectId: 'proj_b', worstCaseMicros: 700n, reservationTtlMs: 1_000 }))
        const lasting = await admitted(request({ worstCaseMicros: 1_000n, reservationTtlMs: 60_000 }))

        const before = await store().snapshot(orgId, '202501', midJanuaryMs + 999)
        const atExpiry = await gateways()[1].snapshot(orgId, '202501', midJanuaryMs + 1_000)
        const watch = await store().watchSettled(orgId, midJanuaryMs + 1_000, midJanuaryMs + 60_000)
        const watched = await store().watchedSnapshot(orgId, '202501', watch!, midJanuaryMs + 1_000)
        const unreleased = await snapshot(orgId)

        expect([before!.heldMicros, before!.reservations.length]).toEqual([5_700n, 3])
        const onlyLasting = { heldMicros: 1_000n, keyHeld: new Map([['key_a', 1_000n]]), projectHeld: new Map([['proj_a', 1_000n]]), expiries: [lasting.expiresAtMs] }
        for (const taken of [atExpiry!, watched!]) {
          expect({ heldMicros: taken.heldMicros, keyHeld: taken.keyHeld, projectHeld: taken.projectHeld, expiries: taken.reservations.map((hold) => hold.expiresAtMs) }).toEqual(onlyLasting)
          expectHoldsConsistent(taken)
        }
        // A read changes nothing: the store still holds them until an admission or a sweep releases them.
        expect(unreleased.heldMicros).toBe(5_700n)
      })

      singleHoldsTest('releaseExpired sweeps expired holds; the late settlement is still debited exactly once', async () => {
        const { orgId, request } = await organization(10_000n)
        const slow = request({ worstCaseMicros: 4_000n, reservationTtlMs: 1_000 })
        const admission = await admitted(slow)
        await admitted(request({ worstCaseMicros: 1_000n, reservationTtlMs: 60_000 }))
        // Others of other keys and projects expire with it: each released where it was counted.
        await admitted(request({ keyId: 'key_b', projectId: 'proj_b', worstCaseMicros: 700n, reservationTtlMs: 500 }))
        await admitted(request({ keyId: 'key_b', projectId: 'proj_a', worstCaseMicros: 300n, reservationTtlMs: 1_000 }))

        const early = await store().releaseExpired(orgId, midJanuaryMs + 999)
        const released = await gateways()[1].releaseExpired(orgId, midJanuaryMs + 1_000)
        const afterSweep = await snapshot(orgId)
        const late = [
          await store().settle(settlementOf(slow, admission, { costMicros: 2_500n, nowMs: midJanuaryMs + 2_000 })),
          await store().settle(settlementOf(slow, admission, { costMicros: 2_500n, nowMs: midJanuaryMs + 3_000 })),
        ]

        expect([early, released]).toEqual([1, 2])
        expect([afterSweep.heldMicros, afterSweep.keyHeld, afterSweep.projectHeld]).toEqual([1_000n, new Map([['key_a', 1_000n]]), new Map([['proj_a', 1_000n]])])
        expectHoldsConsistent(afterSweep)
        expect(late.map((result) => [result.outcome, result.debitedMicros])).toEqual([
          ['settled_unreserved', 2_500n],
          ['already_settled', 0n],
        ])
        const taken = await snapshot(orgId)
        expect([taken.balanceMicros, taken.heldMicros, taken.keySpend.get('key_a')]).toEqual([7_500n, 1_000n, 2_500n])
      })
    })

    describe('credit', () => {
      test('adds to the loaded balance, keeping holds and spends, so a refused request is admitted next', async () => {
        const { orgId, request } = await organization(1_000n, { keySpend: new Map([['key_a', 400n]]) })
        await admitted(request({ worstCaseMicros: 600n }))
        const refused = await store().admit(request({ worstCaseMicros: 900n }))

        const outcome = await gateways()[1].credit(orgId, 2_500n)
        const afterCredit = await store().admit(request({ worstCaseMicros: 900n }))

        expect([refused, outcome, afterCredit.admitted]).toEqual([{ admitted: false, reason: 'insufficient_balance' }, 'credited', true])
        const taken = await snapshot(orgId)
        expect([taken.balanceMicros, taken.heldMicros, taken.keySpend]).toEqual([3_500n, 1_500n, new Map([['key_a', 400n]])])
      })

      test('lifts a balance below zero out of quota_exceeded', async () => {
        const { orgId, request } = await organization(-300n)

        await store().credit(orgId, 1_300n)

        expect((await snapshot(orgId)).balanceMicros).toBe(1_000n)
        expect((await store().admit(request({ worstCaseMicros: 1_000n }))).admitted).toBe(true)
      })

      test('sums concurrent credits from two gateways exactly, beside concurrent admissions', async () => {
        const { orgId, request } = await organization(0n)

        const credits = Array.from({ length: 200 }, (_, i) => gateways()[i % 2]!.credit(orgId, BigInt(i + 1)))
        const admissions = admitTogether(Array.from({ length: 50 }, () => request({ worstCaseMicros: 0n })))
        const outcomes = await Promise.all(credits)
        await admissions

        expect(reasonsOf(outcomes)).toEqual({ credited: 200 })
        expect((await snapshot(orgId)).balanceMicros).toBe(20_100n)
      })

      test('writes nothing for an organization whose counters are not loaded: the ledger rebuild counts the credit', async () => {
        const orgId = newOrgId()

        const outcome = await store().credit(orgId, 5_000n)

        expect(outcome).toBe('not_loaded')
        expect(await store().snapshot(orgId, '202501')).toBeNull()
        expect(await store().admit(admitRequest({ orgId }))).toEqual({ admitted: false, reason: 'not_loaded' })
      })

      test('refuses a credit that is not positive, or would take the balance above 2^53 - 1, writing nothing', async () => {
        const { orgId } = await organization(maxMicros - 10n)

        await expect(store().credit(orgId, 0n)).rejects.toThrow(RangeError)
        await expect(store().credit(orgId, -5n)).rejects.toThrow(RangeError)
        await expect(store().credit(orgId, 11n)).rejects.toThrow(RangeError)
        const exact = await store().credit(orgId, 10n)

        expect(exact).toBe('credited')
        expect((await snapshot(orgId)).balanceMicros).toBe(maxMicros)
      })
    })

    describe('billing month', () => {
      const lastMsOfJanuaryInCairo = Date.UTC(2025, 0, 31, 21, 59, 59, 999)
      const firstMsOfFebruaryInCairo = Date.UTC(2025, 0, 31, 22, 0, 0, 0)

      test('resets the key and project caps at 00:00 Cairo on the 1st, but not the balance', async () => {
        const { orgId, request } = await organization(100_000n)
        const capped = { keyCapMicros: 1_000n, projectCapMicros: 1_000n, worstCaseMicros: 1_000n }
        const january = request({ ...capped, nowMs: lastMsOfJanuaryInCairo - 60_000 })
        const januaryAdmission = await admitted(january)
        await store().settle(settlementOf(january, januaryAdmission, { nowMs: lastMsOfJanuaryInCairo - 30_000 }))

        const lastMoment = await store().admit(request({ ...capped, nowMs: lastMsOfJanuaryInCairo }))
        const midnight = await store().admit(request({ ...capped, nowMs: firstMsOfFebruaryInCairo }))

        expect(januaryAdmission.month).toBe('202501')
        expect(lastMoment).toEqual({ admitted: false, reason: 'spending_cap_reached', capMicros: 1_000n })
        expect(midnight).toMatchObject({ admitted: true, month: '202502' })
        const february = await snapshot(orgId, '202502')
        expect([february.balanceMicros, february.heldMicros, february.keySpend, february.keyHeld]).toEqual([99_000n, 1_000n, new Map(), new Map([['key_a', 1_000n]])])
      })

      test('counts a request in flight at midnight in the month it was admitted in', async () => {
        const { orgId, request } = await organization(100_000n)
        const capped = { keyCapMicros: 1_000n, worstCaseMicros: 1_000n }
        const straddling = request({ ...capped, nowMs: lastMsOfJanuaryInCairo - 5_000 })
        const straddlingAdmission = await admitted(straddling)

        const february = await store().admit(request({ ...capped, nowMs: firstMsOfFebruaryInCairo + 1_000 }))
        await store().settle(settlementOf(straddling, straddlingAdmission, { costMicros: 800n, nowMs: firstMsOfFebruaryInCairo + 2_000 }))

        expect(february.admitted).toBe(true)
        const [jan, feb] = [await snapshot(orgId, '202501'), await snapshot(orgId, '202502')]
        expect([jan.keySpend, jan.keyHeld, feb.keySpend, feb.keyHeld]).toEqual([new Map([['key_a', 800n]]), new Map(), new Map(), new Map([['key_a', 1_000n]])])
      })

      test('follows the organization time zone', async () => {
        const { request } = await organization(100_000n)

        const result = await admitted(request({ nowMs: Date.UTC(2025, 0, 31, 15, 0, 0), timeZone: 'Asia/Tokyo' }))

        expect(result.month).toBe('202502')
      })
    })
  })
}

function reasonsOf(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1
  return counts
}
