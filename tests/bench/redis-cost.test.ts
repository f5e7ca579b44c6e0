import { describe, expect, test } from 'bun:test'
import { createClient } from 'redis'
import { testRedisUrl } from '../support/redis-server'

describe('bench/redis-cost.ts', () => {
  test('measures admit.lua and settle.lua a request on a real Redis, and deletes the keys it made', async () => {
    const url = await testRedisUrl(9)
    const run = Bun.spawn(['bun', 'bench/redis-cost.ts', '--redis', url, '--rounds', '2', '--runs', '6', '--per-run', '5', '--keys', '3'], {
      cwd: `${import.meta.dir}/../..`,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])

    expect(exitCode, stderr).toBe(0)
    expect(stderr.match(/^round \d: admit [\d.]+ us, settle [\d.]+ us a request/gm)).toHaveLength(2)
    const admit = Number(stdout.match(/admit\.lua +([\d.]+) \(the commands it ran ([\d.]+)/)?.[1])
    const settle = Number(stdout.match(/settle\.lua +([\d.]+) \(the commands it ran ([\d.]+)/)?.[1])
    expect(admit).toBeGreaterThan(0)
    expect(settle).toBeGreaterThan(0)
    // An admission runs the key's window commands once each.
    expect(stdout).toMatch(/admit [^;]*zadd 1\.00 /)
    expect(stdout).toMatch(/admit [^;]*zremrangebyscore 1\.00 /)

    const client = await createClient({ url }).connect()
    try {
      expect(await client.keys('bench-redis-cost-*')).toEqual([])
    } finally {
      await client.close()
    }
  }, 60_000)
})
