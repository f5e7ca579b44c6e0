import { computed, signal } from '@preact/signals'
import { can as roleCan, type MembershipRole, type OrgAction } from '@nilegate/shared/roles'
import type { Me, Organization } from './sdk'

/** A membership role, most powerful first. */
export type Role = MembershipRole
export type { OrgAction }

/** One organization of the signed-in user and their role in it. */
export interface Membership {
  id: string
  name: string
  role: Role
}

/** Whether the page knows yet if someone is signed in. */
export type SessionStatus = 'unknown' | 'signed-in' | 'signed-out'

const selectedOrganizationKey = 'nilegate.organization'

/** The signed-in user (GET /v1/auth/me), null when nobody is. */
export const me = signal<Me | null>(null)
export const sessionStatus = signal<SessionStatus>('unknown')
/** The session's CSRF token: sent as X-CSRF-Token on every change made with the session cookie. */
export const csrfToken = signal<string | null>(null)
/** The user's organizations, from /me. */
export const memberships = computed<Membership[]>(() =>
  (me.value?.memberships ?? []).map((membership) => ({ id: membership.organization_id, name: membership.organization_name, role: membership.role as Role })),
)

const selectedOrganizationId = signal<string | null>(readStoredOrganization())

/** The organization the dashboard acts on: the one picked last, else the user's first. */
export const currentMembership = computed<Membership | null>(
  () => memberships.value.find((membership) => membership.id === selectedOrganizationId.value) ?? memberships.value[0] ?? null,
)
/** The signed-in user's role in the current organization. */
export const role = computed<Role | null>(() => currentMembership.value?.role ?? null)
/** The current organization's settings (billing time zone, balance), loaded by the shell. */
export const currentOrganization = signal<Organization | null>(null)
/** Whether the signed-in user runs the platform (sees /admin). */
export const isOperator = computed(() => (me.value as { is_operator?: unknown } | null)?.is_operator === true)
/** The billing time zone of the current organization: usage days and monthly caps follow it. */
export const billingTimeZone = computed(() => currentOrganization.value?.billing_time_zone ?? 'Africa/Cairo')

/** Whether the signed-in user's role in the current organization allows `action`. */
export function can(action: OrgAction): boolean {
  const current = role.value
  return current !== null && roleCan(current, action)
}

/** Acts on the organization `id` from now on, and remembers it on this browser (its id only). */
export function selectOrganization(id: string): void {
  selectedOrganizationId.value = id
  currentOrganization.value = null
  try {
    localStorage.setItem(selectedOrganizationKey, id)
  } catch {
    // Storage can be off (private mode): the choice then lasts for this page only.
  }
}

/** Records who is signed in, with the CSRF token their cookie needs when they change something. */
export function signIn(user: Me, csrf: string | null): void {
  me.value = user
  if (csrf !== null) csrfToken.value = csrf
  sessionStatus.value = 'signed-in'
}

/** Forgets the session on this page (the server already ended it, or is ending it). */
export function signOut(): void {
  me.value = null
  csrfToken.value = null
  currentOrganization.value = null
  sessionStatus.value = 'signed-out'
}

/** The CSRF token in an answer of login or /me, when it has one. */
export function csrfTokenOf(answer: unknown): string | null {
  const token = (answer as { csrf_token?: unknown } | null)?.csrf_token
  return typeof token === 'string' ? token : null
}

function readStoredOrganization(): string | null {
  try {
    return localStorage.getItem(selectedOrganizationKey)
  } catch {
    return null
  }
}
