import { describe, expect, test } from 'bun:test'
import { effectiveRpmLimit } from '../../../server/core/rate-limits'
import { keyIdentity } from '../../support/test-app'

describe('effectiveRpmLimit', () => {
  test.each([
    [{ planTier: 'free' as const }, 20],
    [{ planTier: 'developer' as const }, 500],
    [{ planTier: 'team' as const }, 3_000],
    [{ planTier: 'enterprise' as const }, 10_000],
    [{ planTier: 'developer' as const, orgRpmCeiling: 50_000 }, 50_000],
    [{ planTier: 'team' as const, orgRpmCeiling: 50_000, projectRpmOverride: 900 }, 900],
    [{ planTier: 'team' as const, projectRpmOverride: 900, rpmLimit: 60 }, 60],
    [{ planTier: 'free' as const, rpmLimit: 60 }, 20],
  ])('%j gives %i', (overrides, limit) => {
    expect(effectiveRpmLimit(keyIdentity(overrides))).toBe(limit)
  })
})
