import { expect, test } from 'bun:test'
import { billingMonth } from '../../../server/core/admission'
import { admitRequest } from '../../support/admission-requests'
import { describeEachDatabase } from '../../support/databases'
import { managementApp } from '../../support/management-app'

// 2026-03-12 12:00 in Cairo: mid-month.
const startMs = Date.UTC(2026, 2, 12, 10)

describeEachDatabase('GET /v1/organization/balance with a dead gateway\'s holds', (context) => {
  test('a hold stops counting against available_egp at its expiry, with no admission or sweep in between', async () => {
    let clockMs = startMs
    const gateway = await managementApp(context.current.db, { now: () => clockMs })
    const owner = await gateway.signUp()
    const orgId = await gateway.createOrganization(owner)
    const month = billingMonth(startMs, 'Africa/Cairo')
    await gateway.admission.load(orgId, { month, balanceMicros: 5_000_000n, keySpend: new Map(), projectSpend: new Map() })
    // Two requests of a gateway that then died: nobody settles them.
    for (let stream = 0; stream < 2; stream++) {
      const admitted = await gateway.admission.admit(admitRequest({ orgId, nowMs: startMs, worstCaseMicros: 1_130_000n, reservationTtlMs: 60_000, timeZone: 'Africa/Cairo' }))
      expect(admitted.admitted).toBe(true)
    }
    const availableAt = async (atMs: number) => {
      clockMs = atMs
      const balance = await gateway.send('GET', '/v1/organization/balance', { token: owner.token })
      expect(balance.status).toBe(200)
      return balance.json.available_egp as string
    }

    const whileHeld = await availableAt(startMs + 59_999)
    const atExpiry = await availableAt(startMs + 60_000)

    expect([whileHeld, atExpiry]).toEqual(['2.740000', '5.000000'])
  })
})
