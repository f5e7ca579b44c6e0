import { callOptions, unwrap, type BodyOf, type GatewayApi, type RequestOptions, type Routes } from '../api'
import { AuditLogs } from './audit-logs'
import { OrganizationInvites, OrganizationUsers } from './members'
import { OrganizationModels } from './organization-models'
import type { Organization } from './organizations'
import { Projects } from './projects'
import { OrganizationBalance, OrganizationUsage } from './usage'

export type OrganizationUpdateParams = BodyOf<Routes['organization']['post']>

/**
 * The organization the client acts on (its `organization` option, or the user's first) under
 * /v1/organization: its settings, projects and keys, members, invites, usage, balance, audit trail and catalog.
 */
export class OrganizationResource {
  readonly projects: Projects
  readonly users: OrganizationUsers
  readonly invites: OrganizationInvites
  readonly usage: OrganizationUsage
  readonly balance: OrganizationBalance
  readonly auditLogs: AuditLogs
  readonly models: OrganizationModels

  constructor(private readonly api: GatewayApi) {
    this.projects = new Projects(api)
    this.users = new OrganizationUsers(api)
    this.invites = new OrganizationInvites(api)
    this.usage = new OrganizationUsage(api)
    this.balance = new OrganizationBalance(api)
    this.auditLogs = new AuditLogs(api)
    this.models = new OrganizationModels(api)
  }

  retrieve(options?: RequestOptions): Promise<Organization> {
    return unwrap(this.api.v1.organization.get(callOptions(options)))
  }

  /** Renames the organization or changes its billing time zone (where monthly caps reset). */
  update(params: OrganizationUpdateParams, options?: RequestOptions): Promise<Organization> {
    return unwrap(this.api.v1.organization.post(params, callOptions(options)))
  }
}
