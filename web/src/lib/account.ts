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
  listSessions?: (params?: ListParams) => Promise<ListPage<AccountSession>>
  revokeSession?: (id: string) => Promise<unknown>
}

function calls(): AccountCalls {
  return accountApi().auth as unknown as AccountCalls
}

function missing(name: string): never {
  throw new Error(`This gateway's client cannot ${name} yet.`)
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
