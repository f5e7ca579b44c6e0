import { expect, test } from 'bun:test'
import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { describeAdmissionStore } from '../../support/admission-conformance'
import { admitRequest, midJanuaryMs, newOrgId, orgCounters, settlementOf } from '../../support/admission-requests'

describeAdmissionStore('InProcessAdmissionStore', async () => {
  const store = new InProcessAdmissionStore()
  return { stores: [store, store], close: async () => {} }
})

test('a fence whose rebuilder went away expires: settlements are kept again and its late load writes nothing', async () => {
  const store = new InProcessAdmissionStore({ loadFenceMs: 1_000 })
  const orgId = newOrgId()
  const request = admitRequest({ orgId })
  const abandoned = await store.beginLoad(orgId, midJanuaryMs)

  const during = await store.settle(settlementOf(request, { month: '202501' }, { nowMs: midJanuaryMs + 999 }))
  const afterExpiry = await store.settle(settlementOf(request, { month: '202501' }, { nowMs: midJanuaryMs + 1_000 }))
  // Even by a clock that says the fence still stands: the settlement that found it expired took it away.
  const late = await store.finishLoad(orgId, orgCounters(10_000n), abandoned!, [], midJanuaryMs + 500)
  const next = await store.beginLoad(orgId, midJanuaryMs + 1_000)

  expect([during.outcome, afterExpiry.outcome, late]).toEqual(['loading', 'pending', false])
  expect(next!.token).not.toBe(abandoned!.token)
  expect(next!.keptIds).toEqual([request.requestId])
})
