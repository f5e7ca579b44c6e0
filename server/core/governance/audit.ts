/** Who did something, and from where: stamped on every audit record. */
export interface AuditActor {
  type: 'user' | 'api_key' | 'operator' | 'system'
  /** A user id, key id, or `system`. */
  id: string
  email: string | null
  ip: string | null
  requestId: string | null
}

/** One record of the audit trail, as repositories append it inside the transaction of the change. */
export interface AuditEntry {
  /** Null for platform-level records (a user disabled by an operator, say). */
  orgId: string | null
  projectId?: string | null
  /** Dotted, past tense: `project.created`, `api_key.revoked`, `login.failed`. */
  action: string
  targetType: string
  targetId: string
  /** The changed fields before and after, as JSON values; never a secret. */
  before?: Record<string, unknown> | null
  after?: Record<string, unknown> | null
}

/** An audit record as the API returns it. */
export interface AuditLogRecord {
  id: string
  orgId: string | null
  projectId: string | null
  actor: { type: AuditActor['type']; id: string; email: string | null }
  action: string
  target: { type: string; id: string }
  changes: { before: Record<string, unknown> | null; after: Record<string, unknown> | null } | null
  ip: string | null
  requestId: string | null
  /** Unix seconds. */
  createdAt: number
}

/** Where a page of the audit trail starts: after (older than) or before (newer than) a record id. */
export type AuditLogCursor = { after: string } | { before: string }

export interface AuditLogQuery {
  orgId: string
  /** Each filter keeps the records matching any of its values; absent or empty means no filter. */
  actorIds?: string[]
  actions?: string[]
  targetIds?: string[]
  projectIds?: string[]
  /** Inclusive bounds on the record's time, in unix seconds. */
  since?: number
  until?: number
  /** A cursor naming a record of another organization (or none) is 400 invalid_request. */
  cursor?: AuditLogCursor
  limit: number
}

export interface AuditStore {
  /**
   * Records of one organization, newest first. `hasMore` says whether records lie beyond the page in
   * the direction of the cursor: older ones for `after` (or no cursor), newer ones for `before`.
   */
  listAuditLogs(query: AuditLogQuery): Promise<{ records: AuditLogRecord[]; hasMore: boolean }>
}
