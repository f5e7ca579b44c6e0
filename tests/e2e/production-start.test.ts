import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import postgres from 'postgres'
import { createTempDir } from '../support/databases'
import { startGateway } from '../support/gateway-process'
import { catalogFileModel } from '../support/catalog-file-model'
import { closedPort } from '../support/tcp-proxy'

const home = createTempDir('production-start')
afterAll(() => home.remove())

async function organizationCount(databaseUrl: string): Promise<number> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql<{ count: number }[]>`select count(*)::int as count from organizations`
    return row!.count
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** A catalog whose one model is served by a real upstream (here a port nothing listens on). */
async function upstreamCatalog(): Promise<string> {
  const path = join(home.path, 'upstream-catalog.json')
  const model = catalogFileModel({ id: 'upstream/chat', deployments: [{ provider: 'openai-compatible', base_url: `http://127.0.0.1:${closedPort()}/v1` }] })
  await Bun.write(path, JSON.stringify({ models: [model] }))
  return path
}

describe('a start that is not a try-out creates no demo organization and prints no key', () => {
  test('on an empty Postgres database (DATABASE_URL), with the demo catalog', async () => {
    const gateway = await startGateway({ database: 'postgres' })
    try {
      expect(await organizationCount(gateway.databaseUrl!)).toBe(0)
      expect(gateway.output()).not.toMatch(/sk-[A-Za-z0-9]{20,}/)
      expect(gateway.output()).not.toContain('OPENAI_API_KEY=')
    } finally {
      await gateway.stop()
    }
  }, 60_000)

  test('on an empty Postgres database, with a catalog of openai-compatible deployments', async () => {
    const gateway = await startGateway({ database: 'postgres', catalogPath: await upstreamCatalog() })
    try {
      expect(await organizationCount(gateway.databaseUrl!)).toBe(0)
      expect(gateway.output()).not.toMatch(/sk-[A-Za-z0-9]{20,}/)
    } finally {
      await gateway.stop()
    }
  }, 60_000)

  test('embedded, with a catalog of openai-compatible deployments', async () => {
    const gateway = await startGateway({ database: 'pglite', catalogPath: await upstreamCatalog() })
    try {
      expect(gateway.output()).not.toMatch(/sk-[A-Za-z0-9]{20,}/)
      expect(gateway.output()).not.toContain('demo organization')
    } finally {
      await gateway.stop()
    }
  }, 60_000)
})

describe('DEMO_TENANT=1 asks for the demo organization explicitly', () => {
  test('on an empty Postgres database it is created once and its key printed', async () => {
    const gateway = await startGateway({ database: 'postgres', env: { DEMO_TENANT: '1' } })
    try {
      await gateway.waitForOutput(/OPENAI_API_KEY=sk-[A-Za-z0-9]{32,}\n/)
      expect(await organizationCount(gateway.databaseUrl!)).toBe(1)
    } finally {
      await gateway.stop()
    }
  }, 60_000)
})
