import { GatewayError } from '@nilegate/shared/errors'
import { and, asc, eq, isNull, sql, type SQL } from 'drizzle-orm'
import { newId } from '../../../core/api-keys'
import type { AuditActor } from '../../../core/governance/audit'
import type { Page, PageQuery } from '../../../core/governance/pages'
import type { ApiKeyRecord, ProjectRecord, ProjectStore } from '../../../core/governance/projects'
import { formatEgpOrNull } from '../../../core/money'
import type { Drizzle } from '../drizzle'
import { apiKeys, projects, users } from '../schema'
import { appendAudit, isUniqueViolation, readPage, unixSeconds } from './common'

type ProjectRow = typeof projects.$inferSelect
type ApiKeyRow = typeof apiKeys.$inferSelect

const secondsOrNull = (date: Date | null) => (date === null ? null : unixSeconds(date))

function toProjectRecord(row: ProjectRow): ProjectRecord {
  return {
    id: row.id,
    orgId: row.orgId,
    name: row.name,
    createdAt: unixSeconds(row.createdAt),
    archivedAt: secondsOrNull(row.archivedAt),
    monthlySpendCapMicros: row.monthlySpendCapMicros,
    rpmOverride: row.rpmOverride,
    enabledModels: row.enabledModels,
  }
}

const keyColumns = { key: apiKeys, ownerEmail: users.email }

function toApiKeyRecord({ key, ownerEmail }: { key: ApiKeyRow; ownerEmail: string | null }): ApiKeyRecord {
  return {
    id: key.id,
    orgId: key.orgId,
    projectId: key.projectId,
    name: key.name,
    displayPrefix: key.displayPrefix,
    createdAt: unixSeconds(key.createdAt),
    lastUsedAt: secondsOrNull(key.lastUsedAt),
    expiresAt: secondsOrNull(key.expiresAt),
    revokedAt: secondsOrNull(key.revokedAt),
    rpmLimit: key.rpmLimit,
    monthlySpendCapMicros: key.monthlySpendCapMicros,
    ipAllowList: key.ipAllowList,
    scopes: key.scopes,
    owner: key.createdByUserId !== null && ownerEmail !== null ? { id: key.createdByUserId, email: ownerEmail } : null,
  }
}

// What audit records show of a project or key: wire names, money in EGP, times in unix seconds.
const projectAuditView = (row: ProjectRow) => ({ name: row.name, monthly_spend_cap_egp: formatEgpOrNull(row.monthlySpendCapMicros), rpm_override: row.rpmOverride, enabled_models: row.enabledModels, archived_at: secondsOrNull(row.archivedAt) })
const keyAuditView = (row: ApiKeyRow) => ({
  name: row.name,
  redacted_value: row.displayPrefix,
  expires_at: secondsOrNull(row.expiresAt),
  revoked_at: secondsOrNull(row.revokedAt),
  rpm_limit: row.rpmLimit,
  monthly_spend_cap_egp: formatEgpOrNull(row.monthlySpendCapMicros),
  ip_allow_list: row.ipAllowList,
  scopes: row.scopes,
})

/** The fields whose values differ, before and after; null when nothing changed. */
function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): { before: Record<string, unknown>; after: Record<string, unknown> } | null {
  const changed = Object.keys(after).filter((field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]))
  if (changed.length === 0) return null
  return { before: Object.fromEntries(changed.map((field) => [field, before[field]])), after: Object.fromEntries(changed.map((field) => [field, after[field]])) }
}

/** Only the fields that are set: an absent field leaves its column alone. */
function presentFields<T extends object>(changes: T): Partial<T> {
  return Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)) as Partial<T>
}

/** One page of `table`'s rows within `scope`, by the shared cursor rules. */
function readScopedPage<Row>(
  db: Drizzle,
  table: typeof projects | typeof apiKeys,
  scope: SQL,
  page: PageQuery,
  read: (where: SQL | undefined, limit: number) => Promise<Row[]>,
): Promise<Page<Row>> {
  return readPage(
    page,
    [table.createdAt, table.id],
    (cursor) => db.select({ createdAt: table.createdAt, id: table.id }).from(table as typeof projects).where(and(eq(table.id, cursor), scope)).$dynamic(),
    (after, limit) => read(and(scope, after), limit),
  )
}

const projectNotFound = (projectId: string) => new GatewayError('not_found', `No project '${projectId}' in this organization.`, 'project_id')
const keyNotFound = (keyId: string) => new GatewayError('not_found', `No API key '${keyId}' in this project.`, 'api_key_id')
const nameTaken = (name: string) => new GatewayError('conflict', `The organization already has a project named '${name}'.`, 'name')

function archivedConflict(project: ProjectRow, what: string): GatewayError {
  return new GatewayError('conflict', `The project '${project.id}' is archived, so ${what}. Archived projects cannot be changed and take no new API keys.`)
}

/** The project, locked until the transaction ends, so a concurrent archive cannot slip between a check and a write. */
async function lockProject(tx: Drizzle, orgId: string, projectId: string): Promise<ProjectRow> {
  const [row] = await tx.select().from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId))).for('update')
  if (!row) throw projectNotFound(projectId)
  return row
}

async function lockKey(tx: Drizzle, orgId: string, projectId: string, keyId: string): Promise<ApiKeyRow> {
  const [row] = await tx.select().from(apiKeys).where(and(eq(apiKeys.id, keyId), eq(apiKeys.projectId, projectId), eq(apiKeys.orgId, orgId))).for('update')
  if (!row) throw keyNotFound(keyId)
  return row
}

async function selectKey(db: Drizzle, where: SQL | undefined): Promise<ApiKeyRecord | null> {
  const [row] = await db.select(keyColumns).from(apiKeys).leftJoin(users, eq(users.id, apiKeys.createdByUserId)).where(where)
  return row ? toApiKeyRecord(row) : null
}

/** Writes a key's new row and its audit record; returns the key as the API shows it. */
async function writeKey(tx: Drizzle, actor: AuditActor, current: ApiKeyRow, changes: Partial<ApiKeyRow>, action: string): Promise<ApiKeyRecord> {
  const fields = presentFields(changes)
  const [row] = Object.keys(fields).length === 0 ? [current] : await tx.update(apiKeys).set(fields).where(eq(apiKeys.id, current.id)).returning()
  const diff = changedFields(keyAuditView(current), keyAuditView(row!))
  if (diff) await appendAudit(tx, actor, { orgId: current.orgId, projectId: current.projectId, action, targetType: 'api_key', targetId: current.id, ...diff })
  return (await selectKey(tx, eq(apiKeys.id, current.id)))!
}

export function createProjectRepository(db: Drizzle): ProjectStore {
  async function projectBelongsTo(orgId: string, projectId: string): Promise<boolean> {
    const rows = await db.select({ id: projects.id }).from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId))).limit(1)
    return rows.length > 0
  }

  return {
    projectBelongsTo,

    async listProjects(orgId, query) {
      const scope = and(eq(projects.orgId, orgId), query.includeArchived ? undefined : isNull(projects.archivedAt))!
      const page = await readScopedPage(db, projects, scope, query, (where, limit) => db.select().from(projects).where(where).orderBy(asc(projects.createdAt), asc(projects.id)).limit(limit))
      return { items: page.items.map(toProjectRecord), hasMore: page.hasMore }
    },

    async findProject(orgId, projectId) {
      const [row] = await db.select().from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId)))
      return row ? toProjectRecord(row) : null
    },

    async createProject(orgId, project, actor) {
      const id = newId('proj')
      try {
        return await db.transaction(async (tx) => {
          const [row] = await tx.insert(projects).values({ id, orgId, ...project }).returning()
          await appendAudit(tx, actor, { orgId, projectId: id, action: 'project.created', targetType: 'project', targetId: id, after: projectAuditView(row!) })
          return toProjectRecord(row!)
        })
      } catch (error) {
        if (isUniqueViolation(error)) throw nameTaken(project.name)
        throw error
      }
    },

    async updateProject(orgId, projectId, changes, actor) {
      try {
        return await db.transaction(async (tx) => {
          const current = await lockProject(tx, orgId, projectId)
          if (current.archivedAt !== null) throw archivedConflict(current, 'it cannot be modified')
          const fields = presentFields(changes)
          if (Object.keys(fields).length === 0) return toProjectRecord(current)
          const [row] = await tx.update(projects).set(fields).where(eq(projects.id, projectId)).returning()
          const diff = changedFields(projectAuditView(current), projectAuditView(row!))
          if (diff) await appendAudit(tx, actor, { orgId, projectId, action: 'project.updated', targetType: 'project', targetId: projectId, ...diff })
          return toProjectRecord(row!)
        })
      } catch (error) {
        if (isUniqueViolation(error)) throw nameTaken(changes.name ?? '')
        throw error
      }
    },

    async archiveProject(orgId, projectId, actor) {
      return db.transaction(async (tx) => {
        const current = await lockProject(tx, orgId, projectId)
        if (current.archivedAt !== null) return toProjectRecord(current)
        const [row] = await tx.update(projects).set({ archivedAt: new Date() }).where(eq(projects.id, projectId)).returning()
        await appendAudit(tx, actor, { orgId, projectId, action: 'project.archived', targetType: 'project', targetId: projectId, before: { archived_at: null }, after: { archived_at: secondsOrNull(row!.archivedAt) } })
        return toProjectRecord(row!)
      })
    },

    async listApiKeys(orgId, projectId, query) {
      if (!(await projectBelongsTo(orgId, projectId))) throw projectNotFound(projectId)
      const scope = and(eq(apiKeys.orgId, orgId), eq(apiKeys.projectId, projectId))!
      const page = await readScopedPage(db, apiKeys, scope, query, (where, limit) =>
        db.select(keyColumns).from(apiKeys).leftJoin(users, eq(users.id, apiKeys.createdByUserId)).where(where).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id)).limit(limit),
      )
      return { items: page.items.map(toApiKeyRecord), hasMore: page.hasMore }
    },

    findApiKey: (orgId, projectId, keyId) => selectKey(db, and(eq(apiKeys.id, keyId), eq(apiKeys.projectId, projectId), eq(apiKeys.orgId, orgId))),

    async createApiKey(orgId, projectId, key, actor) {
      const id = newId('key')
      return db.transaction(async (tx) => {
        const project = await lockProject(tx, orgId, projectId)
        if (project.archivedAt !== null) throw archivedConflict(project, 'it takes no new API keys')
        const [row] = await tx.insert(apiKeys).values({ id, orgId, projectId, ...key }).returning()
        await appendAudit(tx, actor, { orgId, projectId, action: 'api_key.created', targetType: 'api_key', targetId: id, after: keyAuditView(row!) })
        return (await selectKey(tx, eq(apiKeys.id, id)))!
      })
    },

    async updateApiKey(orgId, projectId, keyId, changes, actor) {
      return db.transaction(async (tx) => {
        const project = await lockProject(tx, orgId, projectId)
        const current = await lockKey(tx, orgId, projectId, keyId)
        if (project.archivedAt !== null) throw archivedConflict(project, 'its API keys cannot be modified')
        if (current.revokedAt !== null) throw new GatewayError('conflict', `The API key '${keyId}' is revoked and cannot be modified; create a new key instead.`)
        return writeKey(tx, actor, current, changes, 'api_key.updated')
      })
    },

    async revokeApiKey(orgId, projectId, keyId, actor) {
      return db.transaction(async (tx) => {
        const current = await lockKey(tx, orgId, projectId, keyId)
        return writeKey(tx, actor, current, { revokedAt: current.revokedAt ?? new Date() }, 'api_key.revoked')
      })
    },

    async recordKeyUseDenied(denial) {
      const actor: AuditActor = { type: 'api_key', id: denial.keyId, email: null, ip: denial.ip, requestId: denial.requestId }
      await appendAudit(db, actor, { orgId: denial.orgId, projectId: denial.projectId, action: 'api_key.use_denied', targetType: 'api_key', targetId: denial.keyId, after: { reason: denial.reason, ip: denial.ip } })
    },
  }
}
