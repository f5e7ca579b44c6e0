import { callOptions, segment, unwrap, type BodyOf, type DataOf, type GatewayApi, type RequestOptions, type Routes } from '../api'
import { listQuery, paginate, type ListPage, type ListParams } from '../pagination'

type ProjectRoutes = ReturnType<Routes['organization']['projects']>
type KeyRoutes = ReturnType<ProjectRoutes['api_keys']>

/** A project: its monthly spend cap (EGP), RPM override and enabled models. */
export type Project = DataOf<ProjectRoutes['get']>
export type ProjectCreateParams = BodyOf<Routes['organization']['projects']['post']>
export type ProjectUpdateParams = BodyOf<ProjectRoutes['post']>
/** Which projects a list shows: archived ones only when asked. */
export interface ProjectListParams extends ListParams {
  include_archived?: boolean
}

/** An API key as the API shows it: never its secret. */
export type ApiKey = DataOf<KeyRoutes['get']>
/** A new API key: `value` holds the secret, shown this once (null when a retry's answer is replayed). */
export type ApiKeyWithSecret = DataOf<ProjectRoutes['api_keys']['post']>
export type ApiKeyCreateParams = BodyOf<ProjectRoutes['api_keys']['post']>
export type ApiKeyUpdateParams = BodyOf<KeyRoutes['post']>

/** API keys of one project: /v1/organization/projects/{project_id}/api_keys. */
export class ProjectApiKeys {
  constructor(
    private readonly api: GatewayApi,
    private readonly projectId: string,
  ) {}

  /** Every key of the project, page by page as the loop goes. */
  list(params: ListParams = {}): AsyncGenerator<ApiKey, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of keys. */
  page(params: ListParams = {}, options?: RequestOptions): Promise<ListPage<ApiKey>> {
    return unwrap(this.keys().get({ query: listQuery(params), ...callOptions(options) }))
  }

  /**
   * A new key with its limits; its secret (`value`) is in this answer only. A retry with the same
   * `Idempotency-Key` makes no second key: it answers the key as created, with `value: null`.
   */
  create(params: ApiKeyCreateParams, options?: RequestOptions): Promise<ApiKeyWithSecret> {
    return unwrap(this.keys().post(params, callOptions(options)))
  }

  retrieve(keyId: string, options?: RequestOptions): Promise<ApiKey> {
    return unwrap(this.key(keyId).get(callOptions(options)))
  }

  /** Changes a key's name, expiry, limits, allow-list or scopes; every gateway instance sees it within a second. */
  update(keyId: string, params: ApiKeyUpdateParams, options?: RequestOptions): Promise<ApiKey> {
    return unwrap(this.key(keyId).post(params, callOptions(options)))
  }

  /** Revokes a key for good. */
  revoke(keyId: string, options?: RequestOptions): Promise<DataOf<KeyRoutes['delete']>> {
    return unwrap(this.key(keyId).delete(undefined, callOptions(options)))
  }

  private keys() {
    return this.api.v1.organization.projects({ project_id: segment(this.projectId) }).api_keys
  }

  private key(keyId: string) {
    return this.keys()({ key_id: segment(keyId) })
  }
}

/** Projects of the selected organization: /v1/organization/projects. */
export class Projects {
  constructor(private readonly api: GatewayApi) {}

  /** Every project, page by page as the loop goes. */
  list(params: ProjectListParams = {}): AsyncGenerator<Project, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of projects. */
  page(params: ProjectListParams = {}, options?: RequestOptions): Promise<ListPage<Project>> {
    return unwrap(this.api.v1.organization.projects.get({ query: { ...listQuery(params), include_archived: params.include_archived }, ...callOptions(options) }))
  }

  create(params: ProjectCreateParams, options?: RequestOptions): Promise<Project> {
    return unwrap(this.api.v1.organization.projects.post(params, callOptions(options)))
  }

  retrieve(projectId: string, options?: RequestOptions): Promise<Project> {
    return unwrap(this.project(projectId).get(callOptions(options)))
  }

  update(projectId: string, params: ProjectUpdateParams, options?: RequestOptions): Promise<Project> {
    return unwrap(this.project(projectId).post(params, callOptions(options)))
  }

  /** Archives a project: its keys stop working; it stays listed with `include_archived`. */
  archive(projectId: string, options?: RequestOptions): Promise<Project> {
    return unwrap(this.project(projectId).archive.post(undefined, callOptions(options)))
  }

  /** The API keys of a project. */
  apiKeys(projectId: string): ProjectApiKeys {
    return new ProjectApiKeys(this.api, projectId)
  }

  private project(projectId: string) {
    return this.api.v1.organization.projects({ project_id: segment(projectId) })
  }
}
