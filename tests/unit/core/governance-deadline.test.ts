import { describe, expect, test } from 'bun:test'
import { GatewayError } from '@nilegate/shared/errors'
import type { Governance } from '../../../server/core/governance'
import { governanceWithDeadline, storeWithDeadline } from '../../../server/core/governance/deadline'
import { governanceAreas } from '../../../server/core/governance/index'

/** A store whose async method answers as told, keeping `this`. */
class Store {
  readonly label = 'store'
  answer: 'never' | 'value' | 'failure' = 'value'
  find(id: string): Promise<string> {
    if (this.answer === 'never') return new Promise(() => {})
    if (this.answer === 'failure') return Promise.reject(new GatewayError('not_found', `No ${id}.`))
    return Promise.resolve(`${this.label}:${id}`)
  }
  name(): string {
    return this.label
  }
}

describe('storeWithDeadline', () => {
  test('passes answers, failures, plain values and fields through', async () => {
    const store = new Store()
    const bounded = storeWithDeadline(store, 50)

    expect(await bounded.find('a')).toBe('store:a')
    store.answer = 'failure'
    expect(await bounded.find('b').catch((error: GatewayError) => error.code)).toBe('not_found')
    expect(bounded.name()).toBe('store')
    expect(bounded.label).toBe('store')
  })

  test('answers 503 service_unavailable for a call that does not answer in time', async () => {
    const store = new Store()
    store.answer = 'never'

    const refused = await storeWithDeadline(store, 20).find('c').catch((error: GatewayError) => error)

    expect(refused).toBeInstanceOf(GatewayError)
    expect((refused as GatewayError).code).toBe('service_unavailable')
  })

  test('bounds every area of the management stores', () => {
    const governance = Object.fromEntries(governanceAreas.map((area) => [area, new Store()])) as unknown as Governance

    const bounded = governanceWithDeadline(governance, 20)

    expect(Object.keys(bounded).sort()).toEqual([...governanceAreas].sort())
    for (const area of governanceAreas) expect((bounded[area] as unknown as Store).name()).toBe('store')
  })
})
