import type { AuditActor } from './audit'
import type { Page, PageQuery } from './pages'

/** What a project may limit; null means "no limit of its own". */
export interface ProjectSettings {
  monthlySpendCapMicros: bigint | null
  rpmOverride: number | null
  /** Model ids the project's keys may call; null allows every model of the organization. */
  enabledModels: string[] | null
}

export interface ProjectRecord extends ProjectSettings {
  id: string
  orgId: string
  name: string
  /** Unix seconds. */
  createdAt: number
  archivedAt: number | null
}

export interface NewProject extends ProjectSettings {
  name: string
}

/** Fields to change; absent fields stay as they are. */
export type ProjectChanges = Partial<NewProject>

/** What a key may do beyond its scopes; null means "no limit of its own". */
export interface ApiKeySettings {
  name: string
  expiresAt: Date | null
  rpmLimit: number | null
  monthlySpendCapMicros: bigint | null
  /** CIDRs and addresses, v4 and v6; empty allows every address. */
  ipAllowList: string[]
  scopes: string[]
}

export interface ApiKeyRecord {
  id: string
  orgId: string
  projectId: string
  name: string
  /** Like `sk-AbCd...WxYz`: enough to recognise a key, never enough to use it. */
  displayPrefix: string
  /** Unix seconds. */
  createdAt: number
  lastUsedAt: number | null
  expiresAt: number | null
  revokedAt: number | null
  rpmLimit: number | null
  monthlySpendCapMicros: bigint | null
  ipAllowList: string[]
  scopes: string[]
  /** The user who created the key; null once that account is gone. */
  owner: { id: string; email: string } | null
}

/** A key to store: only the hash and display prefix of its secret. */
export interface NewApiKey extends ApiKeySettings {
  secretHash: string
  displayPrefix: string
  createdByUserId: string
}

export type ApiKeyChanges = Partial<ApiKeySettings>

/** Refusals of a known key that are audited: they may be an attack or a leaked key. */
export const keyUseDenialReasons = ['ip_not_allowed', 'key_revoked', 'key_expired', 'key_scope_insufficient'] as const
export type KeyUseDenialReason = (typeof keyUseDenialReasons)[number]

export interface KeyUseDenial {
  orgId: string
  projectId: string
  keyId: string
  reason: KeyUseDenialReason
  ip: string | null
  requestId: string | null
}

/** Whether a key works now, as the API reports it. */
export function apiKeyStatus(key: Pick<ApiKeyRecord, 'revokedAt' | 'expiresAt'>, nowMs: number): 'active' | 'revoked' | 'expired' {
  if (key.revokedAt !== null) return 'revoked'
  if (key.expiresAt !== null && key.expiresAt * 1000 <= nowMs) return 'expired'
  return 'active'
}

/**
 * Projects and their API keys, always within one organization: a project or key of another
 * organization is 404 not_found. Changes to an archived project, or new keys in it, and a project
 * name already taken in the organization are 409 conflict.
 */
export interface ProjectStore {
  /** Whether the project exists in the organization (archived or not). */
  projectBelongsTo(orgId: string, projectId: string): Promise<boolean>
  /** Oldest first; an `after` that is not in the list is 400. */
  listProjects(orgId: string, query: PageQuery & { includeArchived: boolean }): Promise<Page<ProjectRecord>>
  findProject(orgId: string, projectId: string): Promise<ProjectRecord | null>
  createProject(orgId: string, project: NewProject, actor: AuditActor): Promise<ProjectRecord>
  updateProject(orgId: string, projectId: string, changes: ProjectChanges, actor: AuditActor): Promise<ProjectRecord>
  /** Archiving an archived project changes nothing. */
  archiveProject(orgId: string, projectId: string, actor: AuditActor): Promise<ProjectRecord>
  /** Oldest first, revoked keys included. */
  listApiKeys(orgId: string, projectId: string, query: PageQuery): Promise<Page<ApiKeyRecord>>
  findApiKey(orgId: string, projectId: string, keyId: string): Promise<ApiKeyRecord | null>
  createApiKey(orgId: string, projectId: string, key: NewApiKey, actor: AuditActor): Promise<ApiKeyRecord>
  /** A revoked key cannot be changed. */
  updateApiKey(orgId: string, projectId: string, keyId: string, changes: ApiKeyChanges, actor: AuditActor): Promise<ApiKeyRecord>
  /** Revoking a revoked key changes nothing. */
  revokeApiKey(orgId: string, projectId: string, keyId: string, actor: AuditActor): Promise<ApiKeyRecord>
  /** Appends `api_key.use_denied` with the key as the actor. */
  recordKeyUseDenied(denial: KeyUseDenial): Promise<void>
}
