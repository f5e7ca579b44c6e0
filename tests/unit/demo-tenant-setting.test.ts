import { describe, expect, test } from 'bun:test'
import { loadConfig, wantsDemoTenant } from '../../server/config'

const simulatorCatalog = [{ deployments: [{ provider: 'simulator' }] }, { deployments: [{ provider: 'simulator' }, { provider: 'simulator' }] }]
const upstreamCatalog = [{ deployments: [{ provider: 'simulator' }] }, { deployments: [{ provider: 'openai-compatible' }] }]
const postgres = 'postgres://127.0.0.1:5432/nilegate'

describe('wantsDemoTenant: who gets the demo organization and its printed key', () => {
  test('unasked, only the embedded defaults do: no DATABASE_URL and a catalog the simulator serves alone', () => {
    expect(wantsDemoTenant(loadConfig({}), simulatorCatalog)).toBe(true)
    expect(wantsDemoTenant(loadConfig({ DATABASE_URL: postgres }), simulatorCatalog)).toBe(false)
    expect(wantsDemoTenant(loadConfig({}), upstreamCatalog)).toBe(false)
    expect(wantsDemoTenant(loadConfig({ DATABASE_URL: postgres }), upstreamCatalog)).toBe(false)
  })

  test('DEMO_TENANT=1 asks for it anywhere; DEMO_TENANT=0 refuses it on the embedded defaults too', () => {
    expect(wantsDemoTenant(loadConfig({ DATABASE_URL: postgres, DEMO_TENANT: '1' }), upstreamCatalog)).toBe(true)
    expect(wantsDemoTenant(loadConfig({ DEMO_TENANT: 'true' }), upstreamCatalog)).toBe(true)
    expect(wantsDemoTenant(loadConfig({ DEMO_TENANT: '0' }), simulatorCatalog)).toBe(false)
    expect(wantsDemoTenant(loadConfig({ DEMO_TENANT: 'false' }), simulatorCatalog)).toBe(false)
  })

  test('an empty DEMO_TENANT is unset, and a value that is not a yes or a no stops the start', () => {
    expect(loadConfig({ DEMO_TENANT: '' }).demoTenant).toBeNull()
    expect(() => loadConfig({ DEMO_TENANT: 'maybe' })).toThrow('DEMO_TENANT')
  })
})
