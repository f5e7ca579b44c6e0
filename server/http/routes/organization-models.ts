import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import type { CatalogModel } from '../../core/catalog'
import { toModelObject } from '../../core/model-view'
import { mayUseModel, type ModelAccess } from '../../core/resolve-model'
import { authorize, orgAccess, type ManagementDeps, type OrgScope } from '../management'
import type { RouteTable } from '../plugins/error-handler'

export const organizationModelRouteTable: RouteTable = [{ pattern: /^\/v1\/organization\/models(\/.+)?$/, methods: ['GET'] }]

/**
 * GET /v1/organization/models and /v1/organization/models/{model}: the catalog as a signed-in member
 * reads it, for the dashboard (GET /v1/models takes API keys only). The models the organization's
 * allow-list lets it use, narrowed to the enabled models of the `OpenAI-Project` one when it is
 * set; retired ones included, with their date and replacement, so the catalog shows its lifecycle.
 */
export function organizationModelRoutes(deps: ManagementDeps) {
  /** What the selected organization (and project) may call, as a key of it would be checked. */
  const accessOf = async (org: OrgScope): Promise<ModelAccess> => {
    authorize(org, 'organization.read')
    const [organization, project] = await Promise.all([
      deps.governance.organizations.getOrganization(org.orgId),
      org.projectId === null ? null : deps.governance.projects.findProject(org.orgId, org.projectId),
    ])
    if (!organization) throw new GatewayError('not_found', 'The organization no longer exists.')
    return { projectId: org.projectId ?? '', orgAllowedModels: organization.allowedModels, projectEnabledModels: project?.enabledModels ?? null }
  }
  const visible = (access: ModelAccess, model: CatalogModel) => mayUseModel(access, model.id)

  return new Elysia({ normalize: false })
    .use(orgAccess(deps))
    .get('/v1/organization/models', async ({ org }) => {
      const access = await accessOf(org)
      return { object: 'list' as const, data: deps.catalog.models.filter((model) => visible(access, model)).map(toModelObject) }
    })
    .get('/v1/organization/models/*', async ({ org, params }) => {
      let id: string
      try {
        id = decodeURIComponent(params['*'])
      } catch {
        throw new GatewayError('invalid_request', 'The model id in the path is not valid percent-encoding.', 'model')
      }
      const access = await accessOf(org)
      const model = deps.catalog.find(id)
      // A model the organization may not use is as absent as one that does not exist.
      if (!model || !visible(access, model)) throw new GatewayError('not_found', `The model '${id}' is not in your organization's catalog.`, 'model')
      return toModelObject(model)
    })
}
