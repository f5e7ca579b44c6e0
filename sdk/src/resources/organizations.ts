import { callOptions, unwrap, type BodyOf, type DataOf, type GatewayApi, type RequestOptions, type Routes } from '../api'
import { listQuery, paginate, type ListPage, type ListParams } from '../pagination'

/** An organization with the caller's role in it; money as EGP decimal strings. */
export type Organization = DataOf<Routes['organizations']['post']>
export type OrganizationCreateParams = BodyOf<Routes['organizations']['post']>

/** The organizations the signed-in user belongs to: GET and POST /v1/organizations. */
export class Organizations {
  constructor(private readonly api: GatewayApi) {}

  /** Every organization of the user, page by page as the loop goes. */
  list(params: ListParams = {}): AsyncGenerator<Organization, void, undefined> {
    return paginate((page) => this.page(page), params)
  }

  /** One page of them. */
  page(params: ListParams = {}, options?: RequestOptions): Promise<ListPage<Organization>> {
    return unwrap(this.api.v1.organizations.get({ query: listQuery(params), ...callOptions(options) }))
  }

  /** A new organization, owned by the caller. */
  create(params: OrganizationCreateParams, options?: RequestOptions): Promise<Organization> {
    return unwrap(this.api.v1.organizations.post(params, callOptions(options)))
  }
}

/** POST /v1/invites/accept: joins the organization an invitation mail was for. */
export class Invitations {
  constructor(private readonly api: GatewayApi) {}

  /** Accepts the invite whose token was mailed; answers with the organization joined. */
  accept(params: { token: string }, options?: RequestOptions): Promise<Organization> {
    return unwrap(this.api.v1.invites.accept.post(params, callOptions(options)))
  }
}
