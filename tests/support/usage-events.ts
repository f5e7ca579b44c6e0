import type { UsageEvent } from '../../server/core/ports'

let sequence = 0

/** A plausible usage event with a unique request id; override what the test is about. */
export function usageEvent(overrides: Partial<UsageEvent> = {}): UsageEvent {
  sequence += 1
  return {
    requestId: `req_test_${Date.now()}_${sequence}`,
    keyId: 'key_test',
    orgId: 'org_test',
    projectId: 'proj_test',
    model: 'nile-chat-small',
    endpoint: 'chat.completions',
    stream: true,
    promptTokens: 12,
    completionTokens: 34,
    costMicros: 56n,
    status: 200,
    latencyMs: 78,
    region: 'eg-cairo-1',
    createdAt: new Date('2025-01-01T00:00:00.000Z'),
    ...overrides,
  }
}
