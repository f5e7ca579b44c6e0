import { describe, expect, test } from 'bun:test'
import type { AdminOrganization } from '../../../sdk/src/index'
import { settingsChanges, valuesOf } from '../../../web/src/screens/admin/settings-changes'

const organization: AdminOrganization = {
  object: 'organization',
  id: 'org_1',
  name: 'Nile Labs',
  plan_tier: 'team',
  status: 'active',
  custom_rpm_ceiling: 600,
  allowed_models: ['nile/b', 'nile/a'],
  requires_region: null,
  billing_time_zone: 'Africa/Cairo',
  balance_egp: '10.000000',
  role: null,
  created_at: 1_700_000_000,
}

describe('settingsChanges', () => {
  test('sends nothing when the form still shows the organization, whatever the order of its allow-list', () => {
    const values = { ...valuesOf(organization), allowed: ['nile/a', 'nile/b'] }

    expect(settingsChanges(organization, values)).toEqual({})
  })

  test('sends only what changed, clearing settings with null', () => {
    const values = { ...valuesOf(organization), plan_tier: 'enterprise', rpm: ' ', allow: 'plan', region: 'EG' }

    expect(settingsChanges(organization, values)).toEqual({ plan_tier: 'enterprise', custom_rpm_ceiling: null, allowed_models: null, requires_region: 'EG' })
  })

  test('sends a new allow-list and RPM ceiling as the API takes them', () => {
    const values = { ...valuesOf(organization), rpm: '1200', allowed: ['nile/c'] }

    expect(settingsChanges(organization, values)).toEqual({ custom_rpm_ceiling: 1200, allowed_models: ['nile/c'] })
  })
})
