import { Elysia } from 'elysia'
import { retirementInstantMs, type Catalog, type CatalogModel } from '../../core/catalog'
import type { RouteTable } from '../plugins/error-handler'

export const changelogRouteTable: RouteTable = [{ pattern: /^\/v1\/changelog\/?$/, methods: ['GET'] }]

const noHeaders: Readonly<Record<string, string>> = Object.freeze({})
// The catalog hands out the same model object until a retirement changes it.
const headersByModel = new WeakMap<CatalogModel, Readonly<Record<string, string>>>()

/**
 * Headers of an answer served by `model`: for a live model with a scheduled retirement,
 * `Deprecation` (RFC 9745, the date from which it counts as deprecated at the latest: its
 * retirement), `Sunset` (RFC 8594, when it stops answering) and a link to the changelog.
 */
export function lifecycleHeaders(model: CatalogModel): Readonly<Record<string, string>> {
  if (model.status !== 'live' || model.retiresOn === null) return noHeaders
  let headers = headersByModel.get(model)
  if (!headers) {
    const retiresAtMs = retirementInstantMs(model.retiresOn)
    headers = {
      deprecation: `@${Math.floor(retiresAtMs / 1000)}`,
      sunset: new Date(retiresAtMs).toUTCString(),
      link: '</v1/changelog>; rel="sunset"',
    }
    headersByModel.set(model, headers)
  }
  return headers
}

/**
 * GET /v1/changelog: every model retirement, scheduled or done, newest date first, with its
 * replacement. Public, like a status page: it names models and dates, nothing of any tenant.
 */
export function changelogRoutes(catalog: Catalog) {
  return new Elysia({ name: 'changelog', normalize: false }).get('/v1/changelog', () => ({
    object: 'list' as const,
    data: catalog.models
      .filter((model) => model.retiresOn !== null || model.status === 'retired')
      .sort((a, b) => (b.retiresOn ?? '').localeCompare(a.retiresOn ?? '') || a.id.localeCompare(b.id))
      .map((model) => ({
        object: 'model.retirement' as const,
        model: model.id,
        modality: model.modality,
        status: model.status === 'retired' ? ('retired' as const) : ('scheduled' as const),
        retires_on: model.retiresOn,
        replacement: model.replacement,
      })),
  }))
}
