import { accountApi } from '../../lib/api'
import { useResource, type Resource } from '../../lib/use-resource'

/** The model ids and regions an operator can choose among in settings. */
export interface CatalogChoices {
  modelIds: string[]
  regions: string[]
}

/**
 * The catalog's model ids and regions as operators can read them: every model with a deployment,
 * and the retired or retiring ones from the changelog.
 */
export function useCatalogChoices(): Resource<CatalogChoices> {
  return useResource(async (signal) => {
    const client = accountApi()
    const [deployments, changelog] = await Promise.all([client.admin.deployments.list({}, { signal }), client.changelog.list({ signal })])
    const modelIds = new Set([...deployments.data.map((deployment) => deployment.model_id), ...changelog.data.map((retirement) => retirement.model)])
    const regions = new Set(deployments.data.map((deployment) => deployment.region))
    return { modelIds: [...modelIds].sort(), regions: [...regions].sort() }
  }, [])
}
