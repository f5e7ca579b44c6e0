import { Elysia, t } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { nullable } from '@nilegate/shared/schemas/common'
import type { Catalog } from '../../core/catalog'
import type { ProjectChanges, ProjectRecord } from '../../core/governance/projects'
import { formatEgpOrNull, parseEgp } from '../../core/money'
import { idempotent } from '../idempotency'
import { authorize, orgAccess, type ManagementDeps } from '../management'
import { listObject, ListQuery, optional, pageQuery, RpmField, SpendCapField, trimmedName } from '../management-fields'
import type { RouteTable } from '../plugins/error-handler'
import { apiKeyRouteTable, apiKeyRoutes } from './project-api-keys'

export const projectRouteTable: RouteTable = [
  { pattern: /^\/v1\/organization\/projects\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/organization\/projects\/[^/]+\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/organization\/projects\/[^/]+\/archive\/?$/, methods: ['POST'] },
  ...apiKeyRouteTable,
]

/** A project as the API shows it (OpenAI's `organization.project` plus its limits). */
export function projectObject(project: ProjectRecord) {
  return {
    object: 'organization.project' as const,
    id: project.id,
    name: project.name,
    created_at: project.createdAt,
    archived_at: project.archivedAt,
    status: project.archivedAt === null ? ('active' as const) : ('archived' as const),
    monthly_spend_cap_egp: formatEgpOrNull(project.monthlySpendCapMicros),
    rpm_override: project.rpmOverride,
    enabled_models: project.enabledModels,
  }
}

const projectFields = {
  monthly_spend_cap_egp: SpendCapField,
  rpm_override: RpmField,
  enabled_models: nullable(t.Array(t.String({ minLength: 1 }), { maxItems: 1000, error: 'must be an array of model ids, or null for every model' })),
}
const CreateProject = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }), ...projectFields }, { additionalProperties: false })
const ModifyProject = t.Object({ name: t.Optional(t.String({ minLength: 1, maxLength: 200 })), ...projectFields }, { additionalProperties: false })
const ListProjects = t.Object({ ...ListQuery.properties, include_archived: t.Optional(t.Boolean({ error: 'must be true or false' })) }, { additionalProperties: false })
const ProjectParams = t.Object({ project_id: t.String() })

/** 400 naming the model ids the catalog lacks; duplicates are dropped. */
function catalogModelIds(catalog: Catalog, ids: string[]): string[] {
  const unknown = ids.filter((id) => !catalog.find(id))
  if (unknown.length > 0) {
    throw new GatewayError('invalid_request', `Invalid enabled_models: ${unknown.map((id) => `'${id}'`).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not in the catalog; GET /v1/models lists the model ids.`, 'enabled_models')
  }
  return [...new Set(ids)]
}

/** The project fields a body sets; absent fields are left out. */
function projectChanges(catalog: Catalog, body: typeof ModifyProject.static): ProjectChanges {
  return {
    name: optional(body.name, trimmedName) ?? undefined,
    monthlySpendCapMicros: optional(body.monthly_spend_cap_egp, parseEgp),
    rpmOverride: body.rpm_override,
    enabledModels: optional(body.enabled_models, (ids) => catalogModelIds(catalog, ids)),
  }
}

/** Projects of the selected organization under /v1/organization/projects, and their API keys. */
export function projectRoutes(deps: ManagementDeps) {
  const store = deps.governance.projects
  const findProject = async (orgId: string, projectId: string) => {
    const project = await store.findProject(orgId, projectId)
    if (!project) throw new GatewayError('not_found', `No project '${projectId}' in this organization.`, 'project_id')
    return project
  }
  const projects = new Elysia({ normalize: false })
    .use(orgAccess(deps))
    .get(
      '/v1/organization/projects',
      async ({ org, query }) => {
        authorize(org, 'projects.read')
        const page = await store.listProjects(org.orgId, { ...pageQuery(query), includeArchived: query.include_archived ?? false })
        return listObject(page, page.items.map(projectObject))
      },
      { query: ListProjects },
    )
    .post(
      '/v1/organization/projects',
      ({ org, principal, body, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          authorize(org, 'projects.manage')
          const changes = projectChanges(deps.catalog, body)
          const project = await store.createProject(
            org.orgId,
            { name: changes.name!, monthlySpendCapMicros: changes.monthlySpendCapMicros ?? null, rpmOverride: changes.rpmOverride ?? null, enabledModels: changes.enabledModels ?? null },
            principal.actor,
          )
          set.status = 201
          return projectObject(project)
        }),
      { body: CreateProject },
    )
    .get(
      '/v1/organization/projects/:project_id',
      async ({ org, params }) => {
        authorize(org, 'projects.read')
        return projectObject(await findProject(org.orgId, params.project_id))
      },
      { params: ProjectParams },
    )
    .post(
      '/v1/organization/projects/:project_id',
      ({ org, principal, params, body, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          authorize(org, 'projects.manage')
          const project = await store.updateProject(org.orgId, params.project_id, projectChanges(deps.catalog, body), principal.actor)
          await deps.changes.publish({ kind: 'organization', orgId: org.orgId })
          return projectObject(project)
        }),
      { params: ProjectParams, body: ModifyProject },
    )
    .post(
      '/v1/organization/projects/:project_id/archive',
      ({ org, principal, params, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body: null, set, scope: principal.user.id }, async () => {
          authorize(org, 'projects.manage')
          const project = await store.archiveProject(org.orgId, params.project_id, principal.actor)
          await deps.changes.publish({ kind: 'organization', orgId: org.orgId })
          return projectObject(project)
        }),
      { params: ProjectParams },
    )
  return new Elysia({ normalize: false }).use(projects).use(apiKeyRoutes(deps))
}
