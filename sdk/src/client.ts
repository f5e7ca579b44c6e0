import { gatewayApi } from './api'
import { Admin } from './resources/admin'
import { Auth } from './resources/auth'
import { Changelog } from './resources/changelog'
import { ChatCompletions } from './resources/chat'
import { Embeddings } from './resources/embeddings'
import { Models } from './resources/models'
import { OrganizationResource } from './resources/organization'
import { Invitations, Organizations } from './resources/organizations'
import { createTransport, type FetchLike } from './transport'

/** How to reach the gateway and as whom. */
export interface NilegateOptions {
  /** The gateway's base URL as it prints it, such as `http://127.0.0.1:8080/v1`. */
  baseURL: string
  /** An API key (`sk-...`) for inference: chat completions, embeddings, models. */
  apiKey?: string
  /** A session's access token (`ngs_...`) for the management API; `auth.login()` sets it. */
  accessToken?: string
  /**
   * For a browser signed in with the session cookie: the session's CSRF token, or a function that
   * gives it at the time of each call, sent as `X-CSRF-Token` on management calls that change
   * something (every method but GET, HEAD and OPTIONS).
   */
  csrfToken?: CsrfToken
  /** The organization management calls act on (`OpenAI-Organization`); the user's first by default. */
  organization?: string
  /** The project management calls are narrowed to (`OpenAI-Project`). */
  project?: string
  /** Retries after the first attempt on 429, 500, 503, broken connections and timeouts. */
  maxRetries?: number
  /** Milliseconds per attempt: until a JSON answer is read in full, or a stream's headers arrive. */
  timeout?: number
  /** The `fetch` to send with; the platform's by default. */
  fetch?: FetchLike
}

/** A CSRF token, or where to read it at the time of each call. */
export type CsrfToken = string | (() => string | null | undefined)

/** Methods a cookie-authenticated request may use without a CSRF token: they change nothing. */
const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS'])

/** The nilegate client: inference with an API key, management with a session. */
export class Nilegate {
  /** Sent on inference routes. */
  apiKey: string | null
  /** Sent on management routes; set by `auth.login()`, cleared by `auth.logout()`. */
  accessToken: string | null
  /** Sent as `X-CSRF-Token` on management calls other than GET, HEAD and OPTIONS, when the session travels in a cookie. */
  csrfToken: CsrfToken | null
  readonly chat: { readonly completions: ChatCompletions }
  /**
   * The dashboard's playground: chat completions with the signed-in session instead of an API key
   * (members with a verified address), billed and limited like a key of the project the client is
   * narrowed to (`project`).
   */
  readonly playground: { readonly chat: { readonly completions: ChatCompletions } }
  readonly embeddings: Embeddings
  readonly models: Models
  /** Model retirements, scheduled or done. */
  readonly changelog: Changelog
  readonly auth: Auth
  /** The organizations the signed-in user belongs to. */
  readonly organizations: Organizations
  /** The organization the client acts on, and everything in it. */
  readonly organization: OrganizationResource
  readonly invites: Invitations
  /** The platform operators' API (/v1/admin), on the session of an operator. */
  readonly admin: Admin

  constructor(options: NilegateOptions) {
    this.apiKey = options.apiKey ?? null
    this.accessToken = options.accessToken ?? null
    this.csrfToken = options.csrfToken ?? null
    const send = options.fetch ?? ((input, init) => fetch(input, init))
    const transport = createTransport({ fetch: send, maxRetries: options.maxRetries ?? 2, timeoutMs: options.timeout ?? 60_000 })
    // Eden names routes from /v1 on, so it gets the base URL without it.
    const origin = options.baseURL.replace(/\/+$/, '').replace(/\/v1$/, '')
    const scope: Record<string, string> = {}
    if (options.organization) scope['openai-organization'] = options.organization
    if (options.project) scope['openai-project'] = options.project
    const bearer = (token: string | null): Record<string, string> => (token ? { ...scope, authorization: `Bearer ${token}` } : scope)
    const inference = gatewayApi(origin, transport, () => bearer(this.apiKey))
    // Without an access token, a browser's fetch sends the session cookie (same origin) instead.
    const management = gatewayApi(origin, this.withCsrfToken(transport), () => bearer(this.accessToken))

    this.chat = { completions: new ChatCompletions(inference.v1.chat.completions) }
    this.playground = { chat: { completions: new ChatCompletions(management.v1.playground.chat.completions) } }
    this.embeddings = new Embeddings(inference)
    this.models = new Models(inference)
    this.changelog = new Changelog(inference)
    this.auth = new Auth(management, this)
    this.organizations = new Organizations(management)
    this.organization = new OrganizationResource(management)
    this.invites = new Invitations(management)
    this.admin = new Admin(management)
  }

  /** `send` with the CSRF token on every call that may change something. */
  private withCsrfToken(send: FetchLike): FetchLike {
    return (input, init = {}) => {
      const token = typeof this.csrfToken === 'function' ? this.csrfToken() : this.csrfToken
      if (!token || safeMethods.has((init.method ?? 'GET').toUpperCase())) return send(input, init)
      const headers = new Headers(init.headers)
      headers.set('x-csrf-token', token)
      return send(input, { ...init, headers })
    }
  }
}
