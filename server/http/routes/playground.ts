import { Elysia } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { ChatCompletionRequest } from '@nilegate/shared/schemas/chat'
import { playgroundIdentity } from '../../core/governance/playground'
import type { InferenceDeps } from '../../core/inference'
import { authorize, orgAccess, type ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'
import { checkChatBody, serveChat, type InferenceRouteDeps } from './inference'

export const playgroundRouteTable: RouteTable = [{ pattern: /^\/v1\/playground\/chat\/completions\/?$/, methods: ['POST'] }]

/**
 * POST /v1/playground/chat/completions: the dashboard's playground. A signed-in member (not a
 * reader) with a verified address tries models with a session instead of an API key; the request
 * is billed, limited and recorded like a key of the project named by `OpenAI-Project`.
 */
export function playgroundRoutes(deps: InferenceDeps & Pick<InferenceRouteDeps, 'requests'>, management: ManagementDeps) {
  return new Elysia({ name: 'playground', normalize: false })
    .use(orgAccess(management))
    .onTransform(checkChatBody)
    .post(
      '/v1/playground/chat/completions',
      async ({ body, org, principal, request, set }) => {
        authorize(org, 'api_keys.manage')
        if (org.projectId === null) throw new GatewayError('invalid_request', 'Choose the project to bill with the OpenAI-Project header.', 'OpenAI-Project')
        const [organization, project] = await Promise.all([management.governance.organizations.getOrganization(org.orgId), management.governance.projects.findProject(org.orgId, org.projectId)])
        if (!organization || !project) throw new GatewayError('not_found', `No project '${org.projectId}' in this organization.`, 'OpenAI-Project')
        if (project.archivedAt !== null) throw new GatewayError('conflict', `The project '${project.id}' is archived; choose another with the OpenAI-Project header.`, 'OpenAI-Project')
        const identity = playgroundIdentity(organization, project, principal.user.id)
        return serveChat(deps, body, { identity, request, headers: set.headers, release: () => {}, route: '/v1/playground/chat/completions', requests: deps.requests })
      },
      { body: ChatCompletionRequest },
    )
}
