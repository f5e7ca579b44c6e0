import { describe, expect, test } from 'bun:test'
import { withDeadline } from '../../../../server/adapters/redis/client'

describe('withDeadline', () => {
  test("passes on a call's answer or failure", async () => {
    expect(await withDeadline(Promise.resolve('OK'), 1_000)).toBe('OK')
    expect(await withDeadline(Promise.reject(new Error('NOSCRIPT')), 1_000).catch((error: Error) => error.message)).toBe('NOSCRIPT')
  })

  test('rejects a call that does not answer in time, and ignores its late answer', async () => {
    let answer: (value: string) => void = () => {}
    const silent = new Promise<string>((resolve) => (answer = resolve))
    const startedAt = performance.now()

    const outcome = await withDeadline(silent, 50).catch((error: Error) => error.message)
    answer('too late')

    expect(outcome).toBe('redis did not answer within 50 ms')
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(50)
  })

  test('many calls in flight each keep their own deadline', async () => {
    const never = new Promise<string>(() => {})
    const outcomes = await Promise.all([
      withDeadline(never, 30).catch(() => 'expired'),
      withDeadline(Bun.sleep(10).then(() => 'answered'), 200),
      withDeadline(never, 60).catch(() => 'expired'),
    ])

    expect(outcomes).toEqual(['expired', 'answered', 'expired'])
  })
})
