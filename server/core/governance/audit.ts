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

export interface AuditLogQuery {
  orgId: string
  actorIds?: string[]
  actions?: string[]
  targetIds?: string[]
  /** Unix seconds, inclusive bounds. */
  since?: number
  until?: number
  /** Newest first; `after` is the id of the last record of the previous page. */
  after?: string
  limit: number
}

export interface AuditStore {
  /** Records of one organization, newest first; one more than `limit` is asked for to tell `has_more`. */
  listAuditLogs(query: AuditLogQuery): Promise<{ records: AuditLogRecord[]; hasMore: boolean }>
}
