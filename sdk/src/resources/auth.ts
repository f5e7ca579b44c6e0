import { callOptions, unwrap, type BodyOf, type DataOf, type GatewayApi, type RequestOptions, type Routes } from '../api'
import { listQuery, type ListPage, type ListParams } from '../pagination'

type AuthRoutes = Routes['auth']

type LoginAnswer = DataOf<AuthRoutes['login']['post']>
/** A new session from logging in: `access_token` goes in `Authorization: Bearer` on management routes. */
export type Session = Extract<LoginAnswer, { token_type: 'bearer' }>
/** A new browser session (`session: 'cookie'`): the token is in an httpOnly cookie; `csrf_token` goes in `X-CSRF-Token` on changes. */
export type CookieSession = Extract<LoginAnswer, { token_type: 'cookie' }>
/** The signed-in user with their organizations and roles. */
export type Me = DataOf<AuthRoutes['me']['get']>
/** A user account as the API shows it. */
export type User = DataOf<AuthRoutes['signup']['post']>
export type LoginParams = BodyOf<AuthRoutes['login']['post']>
export type SignupParams = BodyOf<AuthRoutes['signup']['post']>
export type ChangePasswordParams = BodyOf<AuthRoutes['password']['post']>
export type ConfirmPasswordResetParams = BodyOf<AuthRoutes['password_reset']['confirm']['post']>
/** A password set: whose, and how many of their sessions it ended. */
export type PasswordChange = DataOf<AuthRoutes['password']['post']>
/** A password reset asked for: the same answer whether or not an account has the address. */
export type PasswordResetRequest = DataOf<AuthRoutes['password_reset']['post']>

/** A verification mail sent again: to which address, and until when its link works. */
export type EmailVerification = DataOf<AuthRoutes['verify_email']['resend']['post']>
/** An active session of the signed-in user; `current` marks the one making the request. */
export type AuthSession = DataOf<AuthRoutes['sessions']['get']>['data'][number]
/** A session ended by `revokeSession`. */
export type AuthSessionRevoked = DataOf<ReturnType<AuthRoutes['sessions']>['delete']>

/** Where the client keeps the session it acts with. */
export interface SessionHolder {
  accessToken: string | null
  /** The CSRF token of a cookie session; one given as a function is the application's, and left alone. */
  csrfToken?: string | null | (() => string | null | undefined)
}

/** Accounts and sessions under /v1/auth. */
export class Auth {
  constructor(
    private readonly api: GatewayApi,
    private readonly holder: SessionHolder,
  ) {}

  /** Creates an account; the gateway mails a verification token (or prints it, without SMTP). */
  signup(params: SignupParams, options?: RequestOptions): Promise<User> {
    return unwrap(this.api.v1.auth.signup.post(params, callOptions(options)))
  }

  /** Confirms an e-mail address with the token that was mailed. */
  verifyEmail(params: { token: string }, options?: RequestOptions): Promise<User> {
    return unwrap(this.api.v1.auth.verify_email.post(params, callOptions(options)))
  }

  /**
   * Logs in; the client then acts with the new session on management routes. With `session: 'cookie'`
   * (in a browser) the gateway keeps the token in an httpOnly cookie the browser sends by itself, and
   * answers with the CSRF token that changes must carry (the client's `csrfToken` option).
   */
  login(params: LoginParams & { session?: 'token' }, options?: RequestOptions): Promise<Session>
  login(params: LoginParams & { session: 'cookie' }, options?: RequestOptions): Promise<CookieSession>
  login(params: LoginParams, options?: RequestOptions): Promise<Session | CookieSession>
  async login(params: LoginParams, options?: RequestOptions): Promise<Session | CookieSession> {
    const session = await unwrap(this.api.v1.auth.login.post(params, callOptions(options)))
    this.holder.accessToken = session.token_type === 'bearer' ? session.access_token : null
    this.keepCsrfToken(session.token_type === 'cookie' ? session.csrf_token : null)
    return session
  }

  /** Ends the client's session; its access token stops working everywhere. */
  async logout(options?: RequestOptions): Promise<DataOf<AuthRoutes['logout']['post']>> {
    const revoked = await unwrap(this.api.v1.auth.logout.post(undefined, callOptions(options)))
    this.holder.accessToken = null
    this.keepCsrfToken(null)
    return revoked
  }

  /** Changes the signed-in user's password; their other sessions end, this one goes on. */
  changePassword(params: ChangePasswordParams, options?: RequestOptions): Promise<PasswordChange> {
    return unwrap(this.api.v1.auth.password.post(params, callOptions(options)))
  }

  /** Asks for a password reset mail (a one-time token, valid an hour) to the address, if an account has it. */
  requestPasswordReset(params: { email: string }, options?: RequestOptions): Promise<PasswordResetRequest> {
    return unwrap(this.api.v1.auth.password_reset.post(params, callOptions(options)))
  }

  /** Sets a new password with the mailed reset token; every session of the account ends. */
  confirmPasswordReset(params: ConfirmPasswordResetParams, options?: RequestOptions): Promise<PasswordChange> {
    return unwrap(this.api.v1.auth.password_reset.confirm.post(params, callOptions(options)))
  }

  /** Mails the signed-in user's verification link again; 409 conflict when the address is verified already. */
  resendVerification(options?: RequestOptions): Promise<EmailVerification> {
    return unwrap(this.api.v1.auth.verify_email.resend.post(undefined, callOptions(options)))
  }

  /** One page of the signed-in user's active sessions, newest first. */
  listSessions(params: ListParams = {}, options?: RequestOptions): Promise<ListPage<AuthSession>> {
    return unwrap(this.api.v1.auth.sessions.get({ query: listQuery(params), ...callOptions(options) }))
  }

  /** Ends one of the signed-in user's sessions, on every device; 404 for one that is not theirs or has ended. */
  revokeSession(id: string, options?: RequestOptions): Promise<AuthSessionRevoked> {
    return unwrap(this.api.v1.auth.sessions({ id }).delete(undefined, callOptions(options)))
  }

  /** The signed-in user and their memberships; on a cookie session, the CSRF token too, which the client then sends. */
  async me(options?: RequestOptions): Promise<Me> {
    const me = await unwrap(this.api.v1.auth.me.get(callOptions(options)))
    if (me.csrf_token !== undefined) this.keepCsrfToken(me.csrf_token)
    return me
  }

  private keepCsrfToken(token: string | null): void {
    if (typeof this.holder.csrfToken !== 'function') this.holder.csrfToken = token
  }
}
