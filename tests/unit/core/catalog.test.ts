import { describe, expect, test } from 'bun:test'
import { parseCatalogContents } from '../../../server/catalog-file'
import { Catalog, defaultTimeouts, type StoredDeployment } from '../../../server/core/catalog'
import { catalogFileModel } from '../../support/catalog-file-model'

function fileModel(id: string, options: { status?: 'live' | 'retired'; deployments?: unknown[] } = {}) {
  return catalogFileModel({ id, status: options.status ?? 'live', ...(options.deployments ? { deployments: options.deployments } : {}) })
}

const file = (...models: unknown[]) => parseCatalogContents({ circuit: { failures: 3, cooldown_ms: 1_000 }, models })

function stored(id: string, modelId: string): StoredDeployment {
  return { id, modelId, provider: 'openai-compatible', baseUrl: 'http://vllm:8000/v1', upstreamModel: 'm', region: 'EU', weight: 2, maxConcurrent: 4, timeouts: defaultTimeouts, apiKeyEnv: 'VLLM_KEY', developerRole: 'developer', createdAt: 1_700_000_000 }
}

describe('Catalog deployments', () => {
  test("stored deployments join their model's deployments from the file, with the file's catalog-wide circuit", () => {
    const { models, settings } = file(fileModel('nile/a'), fileModel('nile/b'))
    const catalog = new Catalog(models, settings)

    catalog.applyDeployments([stored('dep_1', 'nile/a'), stored('dep_2', 'nile/gone')])

    expect(catalog.find('nile/a')!.deployments.map(({ id, region, circuit }) => ({ id, region, circuit }))).toEqual([
      { id: 'nile/a#0', region: 'EG', circuit: { failures: 3, cooldownMs: 1_000 } },
      { id: 'dep_1', region: 'EU', circuit: { failures: 3, cooldownMs: 1_000 } },
    ])
    expect(catalog.find('nile/b')!.deployments.map(({ id }) => id)).toEqual(['nile/b#0'])
    expect(catalog.storedDeployment('dep_1')?.modelId).toBe('nile/a')
  })

  test('a model the file retired takes no stored deployment and is not probed', () => {
    const { models, settings } = file(fileModel('nile/a'), fileModel('nile/old', { status: 'retired', deployments: [] }))
    const catalog = new Catalog(models, settings)

    catalog.applyDeployments([stored('dep_1', 'nile/old')])

    expect(catalog.find('nile/old')!.deployments).toEqual([])
    expect(catalog.liveDeployments.map(({ id }) => id)).toEqual(['nile/a#0'])
  })

  test('a reload keeps stored deployments and retirements, and leaves the objects a running request holds as they were', () => {
    const catalog = new Catalog(file(fileModel('nile/a')).models)
    catalog.applyDeployments([stored('dep_1', 'nile/a')])
    catalog.applyRetirements([{ modelId: 'nile/a', retiresOn: '2999-01-01', replacement: null }])
    const held = catalog.find('nile/a')!
    const heldDeployments = held.deployments.map(({ id }) => id)

    catalog.replaceFile(file(fileModel('nile/a', { deployments: [{ provider: 'simulator', id: 'sim-2' }] })))
    catalog.applyDeployments([])

    expect(catalog.find('nile/a')!.deployments.map(({ id }) => id)).toEqual(['sim-2'])
    expect(catalog.find('nile/a')!.retiresOn).toBe('2999-01-01')
    expect([held.deployments.map(({ id }) => id), heldDeployments]).toEqual([['nile/a#0', 'dep_1'], ['nile/a#0', 'dep_1']])
  })

  test('the longest request a catalog allows: every deployment of a model tried to its total deadline, stored ones included', () => {
    const { models, settings } = file(
      fileModel('nile/a', { deployments: [{ provider: 'simulator', timeouts_ms: { total: 120_000 } }, { provider: 'simulator', timeouts_ms: { total: 30_000 } }] }),
      fileModel('nile/b', { deployments: [{ provider: 'simulator', timeouts_ms: { total: 90_000 } }] }),
    )
    const catalog = new Catalog(models, settings)
    const before = catalog.longestRequestMs

    catalog.applyDeployments([stored('dep_1', 'nile/b')])

    expect(before).toBe(150_000)
    expect(catalog.longestRequestMs).toBe(90_000 + defaultTimeouts.totalMs)
  })
})
