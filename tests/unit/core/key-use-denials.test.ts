import { describe, expect, test } from 'bun:test'
import type { KeyUseDenial } from '../../../server/core/governance/projects'
import { KeyUseDenialRecorder } from '../../../server/core/key-use-denials'
import { keyIdentity } from '../../support/test-app'
import { waitFor } from '../../support/wait-for'

function recorder(options: { fails?: boolean } = {}) {
  const written: KeyUseDenial[] = []
  const logged: string[] = []
  let nowMs = 0
  const denials = new KeyUseDenialRecorder(
    {
      async recordKeyUseDenied(denial) {
        if (options.fails) throw new Error('database down')
        written.push(denial)
      },
    },
    { now: () => nowMs, log: (message) => logged.push(message) },
  )
  return { denials, written, logged, advance: (ms: number) => (nowMs += ms) }
}

describe('KeyUseDenialRecorder', () => {
  test('writes one record per key and reason a minute, whatever the flood', async () => {
    const { denials, written, advance } = recorder()
    const key = keyIdentity()

    for (let i = 0; i < 1_000; i++) denials.record(key, 'ip_not_allowed', '198.51.100.7', `req_${i}`)
    denials.record(key, 'key_expired', '198.51.100.7', 'req_other')
    advance(59_999)
    denials.record(key, 'ip_not_allowed', '198.51.100.7', 'req_late')
    advance(1)
    denials.record(key, 'ip_not_allowed', '198.51.100.8', 'req_next_minute')
    await waitFor(() => written.length === 3)

    expect(written).toEqual([
      { orgId: 'org_test', projectId: 'proj_test', keyId: 'key_test', reason: 'ip_not_allowed', ip: '198.51.100.7', requestId: 'req_0' },
      { orgId: 'org_test', projectId: 'proj_test', keyId: 'key_test', reason: 'key_expired', ip: '198.51.100.7', requestId: 'req_other' },
      { orgId: 'org_test', projectId: 'proj_test', keyId: 'key_test', reason: 'ip_not_allowed', ip: '198.51.100.8', requestId: 'req_next_minute' },
    ])
  })

  test('ignores refusals that are not about the key (a suspended organization, say)', async () => {
    const { denials, written } = recorder()

    denials.record(keyIdentity(), 'org_suspended', null, null)
    denials.record(keyIdentity(), 'key_revoked', null, 'req_1')
    await waitFor(() => written.length === 1)

    expect(written.map((denial) => denial.reason)).toEqual(['key_revoked'])
  })

  test('logs a failed write instead of throwing', async () => {
    const { denials, logged } = recorder({ fails: true })

    expect(() => denials.record(keyIdentity(), 'key_revoked', null, null)).not.toThrow()
    await waitFor(() => logged.length === 1)

    expect(logged[0]).toContain('key_test')
  })
})
