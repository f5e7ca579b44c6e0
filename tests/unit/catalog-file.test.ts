import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { followCatalogFile, parseCatalogContents, reloadCatalogFile } from '../../server/catalog-file'
import { Catalog } from '../../server/core/catalog'
import { LocalChangeBus } from '../../server/core/governance/changes'
import { catalogFileModel } from '../support/catalog-file-model'
import { createTempDir } from '../support/databases'
import { waitFor } from '../support/wait-for'

/** A catalog file of one chat model with these deployments, and top-level `extra`. */
function catalogFile(deployments: unknown[], extra: Record<string, unknown> = {}) {
  return { ...extra, models: [catalogFileModel({ id: 'nile/test-chat', deployments })] }
}

const upstream = { provider: 'openai-compatible', base_url: 'http://vllm:8000/v1/' }

describe('parseCatalogContents', () => {
  test('reads max_concurrent and circuit settings per deployment over the catalog-wide ones, and the probe interval', () => {
    const { models, settings } = parseCatalogContents(
      catalogFile([{ ...upstream, max_concurrent: 8, circuit: { failures: 2 } }, { provider: 'simulator' }], { circuit: { failures: 3, cooldown_ms: 5_000 }, health_probes: { interval_ms: 2_000 } }),
    )

    expect(settings).toEqual({ circuit: { failures: 3, cooldownMs: 5_000 }, probeIntervalMs: 2_000 })
    expect(models[0]!.deployments.map(({ id, baseUrl, maxConcurrent, circuit }) => ({ id, baseUrl, maxConcurrent, circuit }))).toEqual([
      { id: 'nile/test-chat#0', baseUrl: 'http://vllm:8000/v1', maxConcurrent: 8, circuit: { failures: 2, cooldownMs: 5_000 } },
      { id: 'nile/test-chat#1', baseUrl: null, maxConcurrent: null, circuit: { failures: 3, cooldownMs: 5_000 } },
    ])
  })

  test('defaults: 5 failures, a 30 s cooldown, probes every 10 s, no concurrency limit', () => {
    const { models, settings } = parseCatalogContents(catalogFile([upstream]))

    expect(settings).toEqual({ circuit: { failures: 5, cooldownMs: 30_000 }, probeIntervalMs: 10_000 })
    expect(models[0]!.deployments[0]!.maxConcurrent).toBeNull()
    expect(models[0]!.deployments[0]!.developerRole).toBe('developer')
  })

  test("reads developer_role, 'developer' or 'system'", () => {
    const { models } = parseCatalogContents(catalogFile([{ ...upstream, developer_role: 'system' }, { ...upstream, id: 'kept', developer_role: 'developer' }]))

    expect(models[0]!.deployments.map(({ developerRole }) => developerRole)).toEqual(['system', 'developer'])
  })

  test.each([
    [[{ ...upstream, base_url: 'ftp://vllm/v1' }], 'model nile/test-chat, deployment 0: base_url must be an http or https URL'],
    [[{ ...upstream, base_url: 'http://admin:hunter2@vllm/v1' }], 'model nile/test-chat, deployment 0: base_url must not carry credentials'],
    [[{ ...upstream, id: 'same' }, { ...upstream, id: 'same' }], 'model nile/test-chat: the deployment id same is used twice'],
    [[{ ...upstream, max_concurrent: 0 }], '/models/0/deployments/0/max_concurrent: Expected integer to be greater or equal to 1'],
    [[{ ...upstream, api_key_env: 'sk-live-secret' }], '/models/0/deployments/0/api_key_env: Expected string to match'],
    [[{ ...upstream, developer_role: 'user' }], '/models/0/deployments/0/developer_role: Expected union value'],
  ])('refuses %j, saying where, without repeating the value', (deployments, problem) => {
    const error = (() => {
      try {
        parseCatalogContents(catalogFile(deployments))
      } catch (caught) {
        return (caught as Error).message
      }
    })()

    expect(error).toStartWith(problem)
    expect(error).not.toContain('hunter2')
    expect(error).not.toContain('sk-live-secret')
  })
})

describe('reloadCatalogFile', () => {
  const dir = createTempDir('catalog-reload')
  afterAll(() => dir.remove())

  test('replaces the catalog with a file that parses; keeps it, logging why, when the file does not', async () => {
    const path = join(dir.path, 'catalog.json')
    const catalog = new Catalog(parseCatalogContents(catalogFile([upstream])).models)
    const log: string[] = []
    const logger = { log: (message: string) => log.push(message), error: (message: string) => log.push(message) }
    await Bun.write(path, JSON.stringify(catalogFile([upstream, { provider: 'simulator' }], { health_probes: { interval_ms: 0 } })))

    const applied = await reloadCatalogFile(catalog, path, logger)
    await Bun.write(path, '{"models": [')
    const refused = await reloadCatalogFile(catalog, path, logger)

    expect([applied, refused]).toEqual([true, false])
    expect([catalog.find('nile/test-chat')!.deployments.length, catalog.settings.probeIntervalMs]).toEqual([2, 0])
    expect(log).toEqual([`catalog reloaded from ${path}: 1 models, 2 deployments in the file`, expect.stringMatching(/^the catalog was not reloaded and stays as it was: .*catalog\.json: JSON Parse error/)])
  })

  test("an operator's reload request on the change bus re-reads the file on this instance", async () => {
    const path = join(dir.path, 'followed.json')
    const changes = new LocalChangeBus()
    const catalog = new Catalog(parseCatalogContents(catalogFile([upstream])).models)
    const following = followCatalogFile(catalog, path, changes)
    await Bun.write(path, JSON.stringify(catalogFile([upstream, upstream])))

    await changes.publish({ kind: 'catalog_file' })
    await waitFor(() => catalog.find('nile/test-chat')!.deployments.length === 2, { what: 'the catalog to be reloaded' })
    following.stop()
  })
})
