import type { Operation } from '../operation'
import { CatalogReload, DeploymentDeleted, DeploymentList, Deployment } from '../responses/deployments'

/** The operators' API of upstream deployments and the catalog file. */
export const deploymentOperations = {
  'GET /v1/admin/deployments': {
    operationId: 'adminListDeployments',
    summary: 'List the deployments the catalog routes to',
    description: 'From the catalog file and the database, with circuit state and requests in flight on the instance that answers.',
    tag: 'Operator',
    access: 'operator',
    response: DeploymentList,
  },
  'POST /v1/admin/deployments': {
    operationId: 'adminAddDeployment',
    summary: 'Add a deployment of a model',
    description: 'Every instance routes to it within a second.',
    tag: 'Operator',
    access: 'operator',
    status: 201,
    idempotency: 'optional',
    response: Deployment,
    example: { model_id: 'nile/qwen2.5-7b-instruct', provider: 'openai-compatible', base_url: 'http://vllm:8000/v1', upstream_model: 'Qwen/Qwen2.5-7B-Instruct', region: 'EG', weight: 2, api_key_env: 'VLLM_API_KEY' },
  },
  'DELETE /v1/admin/deployments/:id': {
    operationId: 'adminRemoveDeployment',
    summary: 'Remove a deployment added through this API',
    description: 'Deployments of the catalog file are removed by changing the file and reloading it (400).',
    tag: 'Operator',
    access: 'operator',
    params: { id: 'The deployment id.' },
    response: DeploymentDeleted,
    errors: ['invalid_request', 'not_found'],
  },
  'POST /v1/admin/catalog/reload': {
    operationId: 'adminReloadCatalog',
    summary: 'Reload the catalog file on every instance',
    description: 'Each instance re-reads its own file; one that does not parse leaves that instance as it was.',
    tag: 'Operator',
    access: 'operator',
    status: 202,
    bodyOptional: true,
    response: CatalogReload,
  },
} as const satisfies Record<string, Operation>
