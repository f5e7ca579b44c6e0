import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DemoTenant, DemoTenantOptions } from '../../server/adapters/postgres/demo-tenant'
import { callControlSocket, controlSocketPath, ControlSocketError, startControlSocket, type ControlSocket } from '../../server/control-socket'
import { createTempDir } from '../support/databases'

const temp = createTempDir('control')
afterAll(() => temp.remove())
let dirCount = 0
function freshDataDir(): string {
  const path = join(temp.path, `data-${++dirCount}`)
  mkdirSync(path)
  return path
}

const cannedDemo: DemoTenant = {
  organizationId: 'org_canned',
  projectId: 'proj_canned',
  apiKey: 'sk-canned',
  email: 'demo-canned@nilegate.local',
  password: 'secret',
  balanceMicros: 12_345_678_901_234_567n,
}

async function withSocket(dataDir: string, createDemo: (options: DemoTenantOptions) => Promise<DemoTenant>, run: (socket: ControlSocket) => Promise<void>): Promise<void> {
  const socket = startControlSocket(dataDir, { baseUrl: 'http://127.0.0.1:9999/v1', createDemo, setOperator: async (email, grant) => ({ user: { id: 'user_canned', email }, changed: grant }), ledgerStatus: () => Promise.reject(new Error('not asked for')), retainUsage: () => Promise.reject(new Error('not asked for')) })
  try {
    await run(socket)
  } finally {
    await socket.stop()
  }
}

describe('control socket', () => {
  test('carries a demo request to the gateway and its tenant back, bigints intact', async () => {
    const dataDir = freshDataDir()
    const received: DemoTenantOptions[] = []

    await withSocket(
      dataDir,
      async (options) => {
        received.push(options)
        return cannedDemo
      },
      async () => {
        const reply = await callControlSocket(dataDir, { command: 'demo', balanceMicros: 9_007_199_254_740_993n, rpmLimit: 7 })
        const defaults = await callControlSocket(dataDir, { command: 'demo', balanceMicros: null, rpmLimit: null })

        expect(reply).toEqual({ baseUrl: 'http://127.0.0.1:9999/v1', demo: cannedDemo })
        expect(defaults?.demo).toEqual(cannedDemo)
      },
    )

    expect(received).toEqual([{ balanceMicros: 9_007_199_254_740_993n, rpmLimit: 7 }, { rpmLimit: null }])
  })

  test('listens on <data dir>/control.sock, for the owner only, and removes it on stop', async () => {
    const dataDir = freshDataDir()
    let mode = 0

    await withSocket(dataDir, async () => cannedDemo, async (socket) => {
      expect(socket.path).toBe(controlSocketPath(dataDir))
      const stats = statSync(socket.path)
      expect(stats.isSocket()).toBe(true)
      mode = stats.mode & 0o777
    })

    expect(mode).toBe(0o600)
    expect(existsSync(controlSocketPath(dataDir))).toBe(false)
  })

  test('answers null when no gateway listens, with or without a leftover socket file', async () => {
    const dataDir = freshDataDir()

    const withoutFile = await callControlSocket(dataDir, { command: 'demo', balanceMicros: null, rpmLimit: null })
    writeFileSync(controlSocketPath(dataDir), '')
    const withLeftover = await callControlSocket(dataDir, { command: 'demo', balanceMicros: null, rpmLimit: null })

    expect([withoutFile, withLeftover]).toEqual([null, null])
  })

  test('replaces a socket file left by a gateway that crashed', async () => {
    const dataDir = freshDataDir()
    writeFileSync(controlSocketPath(dataDir), '')

    await withSocket(dataDir, async () => cannedDemo, async () => {
      const reply = await callControlSocket(dataDir, { command: 'demo', balanceMicros: null, rpmLimit: null })

      expect(reply?.demo).toEqual(cannedDemo)
    })
  })

  test("reports the gateway's failure as a ControlSocketError with its message", async () => {
    const dataDir = freshDataDir()

    await withSocket(
      dataDir,
      async () => {
        throw new Error('database is shutting down')
      },
      async () => {
        const failure = await callControlSocket(dataDir, { command: 'demo', balanceMicros: null, rpmLimit: null }).catch((error) => error)

        expect(failure).toBeInstanceOf(ControlSocketError)
        expect(failure.message).toBe('database is shutting down')
      },
    )
  })

  test('rejects malformed requests before they reach the gateway', async () => {
    const dataDir = freshDataDir()
    let calls = 0

    await withSocket(
      dataDir,
      async () => {
        calls += 1
        return cannedDemo
      },
      async () => {
        const badRpm = await callControlSocket(dataDir, { command: 'demo', balanceMicros: null, rpmLimit: 0 }).catch((error) => error)
        const badCommand = await callControlSocket(dataDir, { command: 'nope' } as never).catch((error) => error)

        expect(badRpm.message).toContain('rpmLimit')
        expect(badCommand.message).toContain('unknown command')
      },
    )

    expect(calls).toBe(0)
  })
})
