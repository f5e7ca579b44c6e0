import { callOptions, segment, unwrap, type BodyOf, type DataOf, type GatewayApi, type RequestOptions, type Routes } from '../api'
import { listQuery, paginate, type ListPage, type ListParams } from '../pagination'

type UserRoutes = ReturnType<Routes['organization']['users']>
type InviteRoutes = ReturnType<Routes['organization']['invites']>

/** A member of the organization and their role. */
export type OrganizationUser = DataOf<UserRoutes['get']>
export type OrganizationUserUpdateParams = BodyOf<UserRoutes['post']>
/** An invitation to the organization; its token travels only by mail. */
export type Invite = DataOf<InviteRoutes['get']>
export type InviteCreateParams = BodyOf<Routes['organization']['invites']['post']>

/** Members of the selected organization: /v1/organization/users. */
export class OrganizationUsers {
  constructor(private readonly api: GatewayApi) {}

  /** Every member, page by page as the loop goes. */
  list(params: ListParams = {}): AsyncGenerator<OrganizationUser, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of members. */
  page(params: ListParams = {}, options?: RequestOptions): Promise<ListPage<OrganizationUser>> {
    return unwrap(this.api.v1.organization.users.get({ query: listQuery(params), ...callOptions(options) }))
  }

  retrieve(userId: string, options?: RequestOptions): Promise<OrganizationUser> {
    return unwrap(this.user(userId).get(callOptions(options)))
  }

  /** Changes a member's role. */
  update(userId: string, params: OrganizationUserUpdateParams, options?: RequestOptions): Promise<OrganizationUser> {
    return unwrap(this.user(userId).post(params, callOptions(options)))
  }

  /** Removes a member (or, with one's own id, leaves the organization). */
  remove(userId: string, options?: RequestOptions): Promise<DataOf<UserRoutes['delete']>> {
    return unwrap(this.user(userId).delete(undefined, callOptions(options)))
  }

  private user(userId: string) {
    return this.api.v1.organization.users({ user_id: segment(userId) })
  }
}

/** Invitations of the selected organization: /v1/organization/invites. */
export class OrganizationInvites {
  constructor(private readonly api: GatewayApi) {}

  /** Every invite, page by page as the loop goes. */
  list(params: ListParams = {}): AsyncGenerator<Invite, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of invites. */
  page(params: ListParams = {}, options?: RequestOptions): Promise<ListPage<Invite>> {
    return unwrap(this.api.v1.organization.invites.get({ query: listQuery(params), ...callOptions(options) }))
  }

  /** Invites an address with a role; the gateway mails the token. */
  create(params: InviteCreateParams, options?: RequestOptions): Promise<Invite> {
    return unwrap(this.api.v1.organization.invites.post(params, callOptions(options)))
  }

  retrieve(inviteId: string, options?: RequestOptions): Promise<Invite> {
    return unwrap(this.invite(inviteId).get(callOptions(options)))
  }

  /** Withdraws an invite that was not accepted yet. */
  revoke(inviteId: string, options?: RequestOptions): Promise<DataOf<InviteRoutes['delete']>> {
    return unwrap(this.invite(inviteId).delete(undefined, callOptions(options)))
  }

  private invite(inviteId: string) {
    return this.api.v1.organization.invites({ invite_id: segment(inviteId) })
  }
}
