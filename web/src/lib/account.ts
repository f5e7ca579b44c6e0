import { accountApi } from './api'
import type { ListPage, ListParams } from './sdk'

/** An active session of the signed-in user (GET /v1/auth/sessions). */
export interface AccountSession {
  object: 'session'
  id: string
  ip_address: string | null
  user_agent: string | null
  created_at: number
  expires_at: number
  current: boolean
}

interface AccountCalls {
  resendVerification?: () => Promise<unknown>
  changePassword?: (params: { current_password: string; new_password: string }) => Promise<unknown>
  requestPasswordReset?: (params: { email: string }) => Promise<unknown>
  confirmPasswordReset?: (params: { token: string; new_password: string }) => Promise<unknown>
  listSessions?: (params?: ListParams) => Promise<ListPage<AccountSession>>
  revokeSession?: (id: string) => Promise<unknown>
}

function calls(): AccountCalls {
  return accountApi().auth as unknown as AccountCalls
}

function missing(name: string): Promise<never> {
  return Promise.reject(new Error(`This gateway's client cannot ${name} yet.`))
}

/** Mails a new verification link to the signed-in user. */
export function resendVerification(): Promise<unknown> {
  const auth = calls()
  return auth.resendVerification ? auth.resendVerification() : missing('send verification mails')
}

/** One page of the signed-in user's active sessions. */
export function listSessions(params: ListParams = {}): Promise<ListPage<AccountSession>> {
  const auth = calls()
  return auth.listSessions ? auth.listSessions(params) : missing('list sessions')
}

/** Ends one of the signed-in user's sessions. */
export function revokeSession(id: string): Promise<unknown> {
  const auth = calls()
  return auth.revokeSession ? auth.revokeSession(id) : missing('end sessions')
}

/** Changes the signed-in user's password; their other sessions end. */
export function changePassword(params: { current_password: string; new_password: string }): Promise<unknown> {
  const auth = calls()
  return auth.changePassword ? auth.changePassword(params) : missing('change passwords')
}

/** Mails a password reset link to `email` when an account uses it (the answer is the same either way). */
export function requestPasswordReset(params: { email: string }): Promise<unknown> {
  const auth = calls()
  return auth.requestPasswordReset ? auth.requestPasswordReset(params) : missing('reset passwords')
}

/** Sets a new password with the token of a reset mail; every session of the user ends. */
export function confirmPasswordReset(params: { token: string; new_password: string }): Promise<unknown> {
  const auth = calls()
  return auth.confirmPasswordReset ? auth.confirmPasswordReset(params) : missing('reset passwords')
}

/**
 * The token of a mailed link (`#token=...`), taken out of the address bar at once so that it is
 * neither kept in the history nor shown to anyone looking at the screen.
 */
export function takeFragmentToken(): string | null {
  const token = new URLSearchParams(location.hash.slice(1)).get('token')
  if (location.hash) history.replaceState(history.state, '', location.pathname + location.search)
  return token && token.trim() !== '' ? token.trim() : null
}
