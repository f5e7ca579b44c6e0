import { signal } from '@preact/signals'
import { Nilegate, NilegateConnectionError, NilegateError, NilegateTimeoutError, type NilegateOptions } from './sdk'
import { csrfToken, csrfTokenOf, currentMembership, sessionStatus, signIn, signOut } from './session'

/** An API error as the dashboard shows it: what went wrong, what to do, and where. */
export interface ApiProblem {
  message: string
  /** The catalog code, null when no answer came. */
  code: string | null
  /** The request field at fault: forms show the message at that field. */
  param: string | null
  /** What the person can do about it. */
  hint: string | null
  /** The gateway's request id, to quote when asking for help. */
  requestId: string | null
  status: number | null
}

const clients = new Map<string, Nilegate>()

/**
 * A client acting on `organization` (and narrowed to `project`), one per scope, authenticated by
 * the session cookie the browser sends to this origin and the CSRF token the session came with.
 */
export function clientFor(scope: { organization?: string | null; project?: string | null } = {}): Nilegate {
  const key = `${scope.organization ?? ''}/${scope.project ?? ''}`
  let client = clients.get(key)
  if (client === undefined) {
    const options: NilegateOptions & { csrfToken: () => string | null } = {
      baseURL: `${location.origin}/v1`,
      organization: scope.organization ?? undefined,
      project: scope.project ?? undefined,
      maxRetries: 1,
      csrfToken: () => csrfToken.value,
    }
    client = new Nilegate(options)
    clients.set(key, client)
  }
  return client
}

/** The client acting on the organization picked in the top bar. */
export function api(): Nilegate {
  return clientFor({ organization: currentMembership.value?.id })
}

/** The client for the signed-in user's own account (login, sessions, password): no organization. */
export function accountApi(): Nilegate {
  return clientFor()
}

/** Set when an answer says the user's address is not verified yet: the shell shows how to verify. */
export const verificationNeeded = signal(false)

const hints: Record<string, string> = {
  invalid_credentials: 'Check the e-mail address and password, or reset a forgotten password.',
  email_not_verified: 'Open the link in the verification mail we sent, or send a new one.',
  permission_denied: 'Your role does not allow this; ask an owner or admin of the organization.',
  not_a_member: 'Pick another organization in the top bar.',
  rate_limit_exceeded: 'Wait a moment, then try again.',
  quota_exceeded: "The organization's credit is used up; ask the platform's operators to top it up.",
  insufficient_balance: 'Lower max_tokens, shorten the prompt, or have the credit topped up.',
  spending_cap_reached: "Raise the key's monthly spend cap, or wait for next month.",
  project_spend_cap_exceeded: "Raise the project's monthly spend cap, or wait for next month.",
  org_suspended: "Contact the platform's operators to reactivate the organization.",
  conflict: 'Reload the page to see the current state, then try again.',
  not_found: 'It may have been removed or renamed; go back to the list.',
  token_revoked: 'Log in again.',
  user_disabled: "Contact the platform's operators.",
  internal_error: 'Try again in a moment; if it keeps failing, quote the request id.',
  service_unavailable: 'Try again in a minute.',
  request_too_large: 'Send less at once.',
}

/** The message, hint and field of any error a call threw. */
export function describeError(error: unknown): ApiProblem {
  if (error instanceof NilegateError) {
    const wait = error.retryAfter !== null && error.retryAfter > 0 ? ` You can retry in ${error.retryAfter} s.` : ''
    const hint = hints[error.code] ?? (error.status >= 500 ? hints.internal_error : undefined)
    return {
      message: error.message,
      code: error.code,
      param: error.param,
      hint: hint === undefined ? null : hint + wait,
      requestId: error.requestId,
      status: error.status,
    }
  }
  if (error instanceof NilegateTimeoutError) {
    return { message: 'The gateway took too long to answer.', code: null, param: null, hint: 'Check your connection and try again.', requestId: null, status: null }
  }
  if (error instanceof NilegateConnectionError || error instanceof TypeError) {
    return { message: 'Could not reach the gateway.', code: null, param: null, hint: 'Check your connection and try again.', requestId: null, status: null }
  }
  const message = error instanceof Error && error.message ? error.message : 'Something went wrong.'
  return { message, code: null, param: null, hint: 'Reload the page and try again.', requestId: null, status: null }
}

/** Codes that mean the session is over: the page goes back to the login form. */
const sessionEndedCodes = new Set(['token_revoked', 'missing_auth_header', 'user_not_found', 'user_disabled', 'invalid_token_type'])

/**
 * Describes `error` and reacts to what concerns the whole page: an ended session goes to
 * /login?next=<this page>; an unverified address raises the verification notice; a lost membership
 * reloads the user's organizations.
 */
export function reportError(error: unknown): ApiProblem {
  const problem = describeError(error)
  if (problem.code !== null && sessionEndedCodes.has(problem.code)) {
    signOut()
    navigateTo(loginPath(), true)
  } else if (problem.code === 'email_not_verified') {
    verificationNeeded.value = true
  } else if (problem.code === 'not_a_member') {
    void refreshSession()
  }
  return problem
}

/** The login page, coming back to `next` (this page by default) afterwards. */
export function loginPath(next: string = location.pathname + location.search): string {
  return next === '/' || next.startsWith('/login') ? '/login' : `/login?next=${encodeURIComponent(next)}`
}

/** `next` when it is a page of this site, else the overview: never another origin. */
export function safeNextPath(next: string | null | undefined): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/'
  return next
}

let router: (url: string, replace?: boolean) => void = (url) => location.assign(url)

/** Hands the router's navigation to code outside components (the app does it once). */
export function connectRouter(route: (url: string, replace?: boolean) => void): void {
  router = route
}

/** Goes to `url` in the page, without reloading it. */
export function navigateTo(url: string, replace = false): void {
  router(url, replace)
}

/** Asks who is signed in (GET /v1/auth/me with the session cookie) and records it. */
export async function refreshSession(): Promise<void> {
  try {
    const user = await accountApi().auth.me()
    signIn(user, csrfTokenOf(user))
  } catch (error) {
    if (error instanceof NilegateError && error.status === 401) signOut()
    else if (sessionStatus.value === 'unknown') throw error
  }
}

/** Ends the session on the server, then on the page. */
export async function logOut(): Promise<void> {
  try {
    await accountApi().auth.logout()
  } finally {
    signOut()
    clients.clear()
    navigateTo('/login')
  }
}
