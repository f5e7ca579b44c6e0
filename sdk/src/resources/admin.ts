import { callOptions, segment, unwrap, type BodyOf, type DataOf, type GatewayApi, type RequestOptions, type Routes } from '../api'
import type { ModelList } from '@nilegate/shared/schemas/models'
import { listQuery, paginate, type ListPage, type ListParams } from '../pagination'
import { auditLogQuery, type AuditLog, type AuditLogListParams } from './audit-logs'

type AdminRoutes = Routes['admin']
type OrganizationRoutes = ReturnType<AdminRoutes['organizations']>

/** An organization as operators see it: settings, status and balance. */
export type AdminOrganization = DataOf<AdminRoutes['organizations']['get']>['data'][number]
/** `q` keeps the organization with that id and those whose name contains it, in any case. */
export type AdminOrganizationListParams = ListParams & { status?: 'active' | 'suspended'; q?: string }
/** Plan tier, RPM ceiling, allowed models and required region; null clears a setting. */
export type AdminOrganizationUpdateParams = BodyOf<OrganizationRoutes['post']>
export type AdminCreditParams = BodyOf<OrganizationRoutes['credits']['post']>
export type AdminCredit = DataOf<OrganizationRoutes['credits']['post']>
/** A row of an organization's credit ledger (a top-up, the demo credit, an adjustment or a refund) and who added it. */
export type AdminCreditTransaction = DataOf<OrganizationRoutes['credits']['get']>['data'][number]
/** A user as operators see it. */
export type AdminUser = DataOf<AdminRoutes['users']['get']>['data'][number]
export type AdminUserListParams = ListParams & { email?: string }
/** A request whose upstream reported more usage than its hold: what was billed, and what was not. */
export type UnbilledUsage = DataOf<AdminRoutes['unbilled_usage']['get']>['data'][number]
export type UnbilledUsageListParams = ListParams & { organization_id?: string }
export type ModelRetirementParams = BodyOf<AdminRoutes['models']['*']['post']>
/** A deployment of a model, with its health as this instance's router sees it. */
export type Deployment = DataOf<AdminRoutes['deployments']['get']>['data'][number]
export type DeploymentCreateParams = BodyOf<AdminRoutes['deployments']['post']>

/** Organizations of the whole platform: list, settings, suspension, credit, and the records of each. */
export class AdminOrganizations {
  constructor(private readonly api: GatewayApi) {}

  /** Every organization, page by page as the loop goes. */
  list(params: AdminOrganizationListParams = {}): AsyncGenerator<AdminOrganization, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of them. */
  page(params: AdminOrganizationListParams = {}, options?: RequestOptions): Promise<ListPage<AdminOrganization>> {
    return unwrap(this.api.v1.admin.organizations.get({ query: { ...listQuery(params), status: params.status, q: params.q }, ...callOptions(options) }))
  }

  retrieve(id: string, options?: RequestOptions): Promise<AdminOrganization> {
    return unwrap(this.organization(id).get(callOptions(options)))
  }

  /** Changes the settings named; the others stay. */
  update(id: string, params: AdminOrganizationUpdateParams, options?: RequestOptions): Promise<AdminOrganization> {
    return unwrap(this.organization(id).post(params, callOptions(options)))
  }

  /** Refuses the organization's keys and sessions until it is reactivated. */
  suspend(id: string, params: { reason?: string } = {}, options?: RequestOptions): Promise<AdminOrganization> {
    return unwrap(this.organization(id).suspend.post(params, callOptions(options)))
  }

  reactivate(id: string, options?: RequestOptions): Promise<AdminOrganization> {
    return unwrap(this.organization(id).reactivate.post({}, callOptions(options)))
  }

  /** Adds prepaid credit (EGP as a decimal string); a retried call is applied once. */
  credit(id: string, params: AdminCreditParams, options?: RequestOptions): Promise<AdminCredit> {
    return unwrap(this.organization(id).credits.post(params, callOptions(options)))
  }

  /** One page of the organization's credit ledger, top-ups first of all, newest first. */
  credits(id: string, params: ListParams = {}, options?: RequestOptions): Promise<ListPage<AdminCreditTransaction>> {
    return unwrap(this.organization(id).credits.get({ query: listQuery(params), ...callOptions(options) }))
  }

  /** One page of the organization's audit trail, newest first, filtered as `organization.auditLogs` filters. */
  auditLogs(id: string, params: AuditLogListParams = {}, options?: RequestOptions): Promise<ListPage<AuditLog>> {
    return unwrap(this.organization(id).audit_logs.get({ query: auditLogQuery(params), ...callOptions(options) }))
  }

  private organization(id: string) {
    return this.api.v1.admin.organizations({ id: segment(id) })
  }
}

/** Users of the whole platform: list, disable and enable. */
export class AdminUsers {
  constructor(private readonly api: GatewayApi) {}

  /** Every user, page by page as the loop goes. */
  list(params: AdminUserListParams = {}): AsyncGenerator<AdminUser, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of them. */
  page(params: AdminUserListParams = {}, options?: RequestOptions): Promise<ListPage<AdminUser>> {
    return unwrap(this.api.v1.admin.users.get({ query: { ...listQuery(params), email: params.email }, ...callOptions(options) }))
  }

  /** Ends the user's sessions and refuses new ones. */
  disable(id: string, options?: RequestOptions): Promise<AdminUser> {
    return unwrap(this.user(id).disable.post({}, callOptions(options)))
  }

  enable(id: string, options?: RequestOptions): Promise<AdminUser> {
    return unwrap(this.user(id).enable.post({}, callOptions(options)))
  }

  private user(id: string) {
    return this.api.v1.admin.users({ id: segment(id) })
  }
}

/** Requests billed less than their upstream reported (never more than their hold). */
export class AdminUnbilledUsage {
  constructor(private readonly api: GatewayApi) {}

  /** Every such request, oldest first, page by page as the loop goes. */
  list(params: UnbilledUsageListParams = {}): AsyncGenerator<UnbilledUsage, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of them. */
  page(params: UnbilledUsageListParams = {}, options?: RequestOptions): Promise<ListPage<UnbilledUsage>> {
    return unwrap(this.api.v1.admin.unbilled_usage.get({ query: { ...listQuery(params), organization_id: params.organization_id }, ...callOptions(options) }))
  }
}

/** The whole catalog, and model retirements: scheduling one, and taking a stored one back. */
export class AdminModels {
  constructor(private readonly api: GatewayApi) {}

  /** Every model of the catalog, retired ones included. */
  list(options?: RequestOptions): Promise<ModelList> {
    return unwrap(this.api.v1.admin.models.get(callOptions(options)))
  }

  /** Retires the model on `retires_on` (YYYY-MM-DD), naming its replacement; answers the model as it now is. */
  retire(id: string, params: ModelRetirementParams, options?: RequestOptions) {
    return unwrap(this.api.v1.admin.models[`${segment(id)}/retire` as '*'].post(params, callOptions(options)))
  }

  /** Takes back a retirement stored through the API (one from the catalog file stays). */
  cancelRetirement(id: string, options?: RequestOptions) {
    return unwrap(this.api.v1.admin.models[`${segment(id)}/retirement` as '*'].delete(undefined, callOptions(options)))
  }
}

/** Deployments added through the API, beside the catalog file's. */
export class AdminDeployments {
  constructor(private readonly api: GatewayApi) {}

  /** Every deployment, or those of one model. */
  list(params: { model_id?: string } = {}, options?: RequestOptions): Promise<ListPage<Deployment>> {
    return unwrap(this.api.v1.admin.deployments.get({ query: params, ...callOptions(options) }))
  }

  create(params: DeploymentCreateParams, options?: RequestOptions): Promise<Deployment> {
    return unwrap(this.api.v1.admin.deployments.post(params, callOptions(options)))
  }

  /** Removes a deployment added through the API; the catalog file's are changed in the file. */
  delete(id: string, options?: RequestOptions) {
    return unwrap(this.deployment(id).delete(undefined, callOptions(options)))
  }

  private deployment(id: string) {
    return this.api.v1.admin.deployments({ id: segment(id) })
  }
}

/** The platform operators' API under /v1/admin (operators only; others get permission_denied). */
export class Admin {
  readonly organizations: AdminOrganizations
  readonly users: AdminUsers
  readonly models: AdminModels
  readonly deployments: AdminDeployments
  readonly unbilledUsage: AdminUnbilledUsage

  constructor(private readonly api: GatewayApi) {
    this.organizations = new AdminOrganizations(api)
    this.users = new AdminUsers(api)
    this.models = new AdminModels(api)
    this.deployments = new AdminDeployments(api)
    this.unbilledUsage = new AdminUnbilledUsage(api)
  }

  /** Asks every instance to re-read its catalog file; each logs the outcome. */
  reloadCatalog(options?: RequestOptions) {
    return unwrap(this.api.v1.admin.catalog.reload.post({}, callOptions(options)))
  }
}
