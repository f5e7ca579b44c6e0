import type { Governance } from '../../../core/governance'
import type { Drizzle } from '../drizzle'
import { createAccountRepository } from './accounts'
import { createAuditRepository } from './audit'
import { createDeploymentRepository } from './deployments'
import { createIdempotencyRepository } from './idempotency'
import { createOperatorRepository } from './operator'
import { createOrganizationRepository } from './organizations'
import { createProjectRepository } from './projects'
import { createUsageReportRepository } from './usage'

/** The management API's repositories over one database. */
export function createGovernance(db: Drizzle): Governance {
  return {
    accounts: createAccountRepository(db),
    organizations: createOrganizationRepository(db),
    projects: createProjectRepository(db),
    operator: createOperatorRepository(db),
    deployments: createDeploymentRepository(db),
    audit: createAuditRepository(db),
    idempotency: createIdempotencyRepository(db),
    usage: createUsageReportRepository(db),
  }
}
