import { accountOperations } from './operations/accounts'
import { deploymentOperations } from './operations/deployments'
import { inferenceOperations } from './operations/inference'
import { operatorOperations } from './operations/operator'
import { probeOperations } from './operations/probes'
import { organizationOperations } from './operations/organizations'
import { projectOperations } from './operations/projects'
import { reportOperations } from './operations/reports'

/**
 * Every route of the app as `METHOD path` (Elysia's path), with what the document says about it.
 * The request schemas are not here: they are read from the routes themselves.
 */
export const operations = {
  ...inferenceOperations,
  ...accountOperations,
  ...organizationOperations,
  ...projectOperations,
  ...reportOperations,
  ...operatorOperations,
  ...deploymentOperations,
  ...probeOperations,
}

export type OperationKey = keyof typeof operations
