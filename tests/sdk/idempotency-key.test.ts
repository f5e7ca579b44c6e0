import { expect, test } from 'bun:test'
import { Nilegate } from '../../sdk/src'
import { describeEachDatabase } from '../support/databases'
import { managementApp, signInOperator } from '../support/management-app'

describeEachDatabase('RequestOptions.idempotencyKey', (context) => {
  /** An operator's client of the in-process app, and every request it sent. */
  async function operatorClient() {
    const gateway = await managementApp(context.current.db)
    const { operator } = await signInOperator(gateway)
    const sent: Request[] = []
    const ng = new Nilegate({
      baseURL: 'http://localhost/v1',
      accessToken: operator.token,
      maxRetries: 0,
      fetch: (input, init) => {
        const request = new Request(input, init)
        sent.push(request.clone())
        return gateway.app.handle(request)
      },
    })
    return { gateway, ng, sent }
  }

  test('is sent as Idempotency-Key in place of the key the client makes per call', async () => {
    const { ng, sent } = await operatorClient()
    const { organizationId } = await context.current.db.createDemoTenant({ balanceMicros: 0n })

    await ng.admin.organizations.credit(organizationId, { amount_egp: '5' }, { idempotencyKey: 'top-up-form-1' })
    await ng.admin.organizations.credit(organizationId, { amount_egp: '5' })

    expect(sent.map((request) => request.headers.get('idempotency-key'))).toEqual(['top-up-form-1', expect.stringMatching(/^ng-retry-[0-9a-f]{32}$/)])
  })

  test('a top-up sent again with the same key (a form retried after a failure) credits once', async () => {
    const { ng } = await operatorClient()
    const { organizationId } = await context.current.db.createDemoTenant({ balanceMicros: 0n })
    const key = crypto.randomUUID()

    const first = await ng.admin.organizations.credit(organizationId, { amount_egp: '12.5', note: 'bank transfer' }, { idempotencyKey: key })
    const again = await ng.admin.organizations.credit(organizationId, { amount_egp: '12.5', note: 'bank transfer' }, { idempotencyKey: key })
    const other = await ng.admin.organizations.credit(organizationId, { amount_egp: '12.5', note: 'bank transfer' }, { idempotencyKey: crypto.randomUUID() })

    expect(again).toEqual(first)
    expect([first.balance_egp, other.balance_egp]).toEqual(['12.500000', '25.000000'])
  })
})
