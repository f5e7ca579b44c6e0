import type { AccountStore } from './accounts'
import type { AuditStore } from './audit'
import type { DeploymentStore } from './deployments'
import type { IdempotencyStore } from './idempotency'
import type { OperatorStore } from './operator'
import type { OrganizationStore } from './organizations'
import type { ProjectStore } from './projects'
import type { UsageReportStore } from './usage'

/** Everything the management API asks of the database, by area. */
export interface Governance {
  accounts: AccountStore
  organizations: OrganizationStore
  projects: ProjectStore
  operator: OperatorStore
  deployments: DeploymentStore
  audit: AuditStore
  idempotency: IdempotencyStore
  usage: UsageReportStore
}

export type GovernanceArea = keyof Governance
export const governanceAreas = ['accounts', 'organizations', 'projects', 'operator', 'deployments', 'audit', 'idempotency', 'usage'] as const satisfies readonly GovernanceArea[]
