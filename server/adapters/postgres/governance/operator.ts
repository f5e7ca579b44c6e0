import { GatewayError } from '@nilegate/shared/errors'
import { and, asc, desc, eq, ilike, inArray, isNull, or, sql, type SQL } from 'drizzle-orm'
import type { AnyPgColumn, PgSelect } from 'drizzle-orm/pg-core'
import { newId } from '../../../core/api-keys'
import { normalizeEmail } from '../../../core/governance/accounts'
import type { AuditActor } from '../../../core/governance/audit'
import type { CreditTransactionRecord, OperatorStore, OrganizationSettings } from '../../../core/governance/operator'
import type { Page, PageQuery } from '../../../core/governance/pages'
import type { ModelRetirement } from '../../../core/catalog'
import type { Drizzle } from '../drizzle'
import { auditLogs, creditTransactions, modelRetirements, organizations, sessions, usageEvents, users } from '../schema'
import { toUserRecord } from './accounts'
import { appendAudit, readPage, unixSeconds } from './common'
import { toOrganizationRecord } from './organizations'

/** Each setting an operator changes, with the audit action and wire name its record carries. */
const settingAudits = [
  { setting: 'planTier', field: 'plan_tier', action: 'organization.plan_changed' },
  { setting: 'customRpmCeiling', field: 'custom_rpm_ceiling', action: 'organization.rpm_ceiling_changed' },
  { setting: 'allowedModels', field: 'allowed_models', action: 'organization.allowed_models_changed' },
  { setting: 'requiresRegion', field: 'requires_region', action: 'organization.region_requirement_changed' },
] as const satisfies ReadonlyArray<{ setting: keyof OrganizationSettings; field: string; action: string }>

function retirementFields(retirement: ModelRetirement) {
  return { retires_on: retirement.retiresOn, replacement: retirement.replacement }
}

async function readRetirements(db: Drizzle): Promise<ModelRetirement[]> {
  return db.select({ modelId: modelRetirements.modelId, retiresOn: modelRetirements.retiresOn, replacement: modelRetirements.replacement }).from(modelRetirements).orderBy(asc(modelRetirements.modelId))
}

async function lockOrganizationRow(tx: Drizzle, orgId: string) {
  const [row] = await tx.select().from(organizations).where(eq(organizations.id, orgId)).for('update')
  return row ?? null
}

function auditOrganization(tx: Drizzle, actor: AuditActor, orgId: string, action: string, before: Record<string, unknown>, after: Record<string, unknown>) {
  return appendAudit(tx, actor, { orgId, action, targetType: 'organization', targetId: orgId, before, after })
}

/** Who added each of these credits of `orgId`, by their `credit.added` audit records. */
async function creditActors(db: Drizzle, orgId: string, creditIds: string[]): Promise<Map<string, NonNullable<CreditTransactionRecord['actor']>>> {
  if (creditIds.length === 0) return new Map()
  const rows = await db
    .select({ creditId: auditLogs.targetId, type: auditLogs.actorType, id: auditLogs.actorId, email: auditLogs.actorEmail })
    .from(auditLogs)
    .where(and(eq(auditLogs.orgId, orgId), eq(auditLogs.action, 'credit.added'), inArray(auditLogs.targetId, creditIds)))
  return new Map(rows.map(({ creditId, ...actor }) => [creditId, actor]))
}

export function createOperatorRepository(db: Drizzle): OperatorStore {
  return {
    async setOperator(email, isOperator, actor) {
      return db.transaction(async (tx) => {
        const [row] = await tx.select().from(users).where(and(eq(users.email, normalizeEmail(email)), isNull(users.deletedAt))).for('update')
        if (!row) return null
        if (row.isOperator === isOperator) return { record: toUserRecord(row), changed: false }
        const [updated] = await tx.update(users).set({ isOperator }).where(eq(users.id, row.id)).returning()
        await appendAudit(tx, actor, {
          orgId: null,
          action: isOperator ? 'user.operator_granted' : 'user.operator_revoked',
          targetType: 'user',
          targetId: row.id,
          before: { is_operator: row.isOperator },
          after: { is_operator: isOperator },
        })
        return { record: toUserRecord(updated!), changed: true }
      })
    },

    async listOrganizations({ status, search, ...page }) {
      // LIKE's wildcards in the text match themselves.
      const matches = search === undefined ? undefined : or(eq(organizations.id, search), ilike(organizations.name, `%${search.replace(/[\\%_]/g, (character) => `\\${character}`)}%`))
      return readPage(
        page,
        [organizations.createdAt, organizations.id],
        (cursor) => db.select({ createdAt: organizations.createdAt, id: organizations.id }).from(organizations).where(eq(organizations.id, cursor)).$dynamic(),
        async (after, limit) => {
          const rows = await db
            .select()
            .from(organizations)
            .where(and(after, status === undefined ? undefined : eq(organizations.status, status), matches))
            .orderBy(asc(organizations.createdAt), asc(organizations.id))
            .limit(limit)
          return rows.map(toOrganizationRecord)
        },
      )
    },

    async updateOrganizationSettings(orgId, settings, actor) {
      return db.transaction(async (tx) => {
        const row = await lockOrganizationRow(tx, orgId)
        if (!row) return null
        const changes = settingAudits.filter(({ setting }) => settings[setting] !== undefined && JSON.stringify(settings[setting]) !== JSON.stringify(row[setting]))
        if (changes.length === 0) return { record: toOrganizationRecord(row), changed: false }
        const [updated] = await tx
          .update(organizations)
          .set(Object.fromEntries(changes.map(({ setting }) => [setting, settings[setting]])))
          .where(eq(organizations.id, orgId))
          .returning()
        for (const { setting, field, action } of changes) {
          await auditOrganization(tx, actor, orgId, action, { [field]: row[setting] }, { [field]: updated![setting] })
        }
        return { record: toOrganizationRecord(updated!), changed: true }
      })
    },

    async setOrganizationStatus(orgId, status, reason, actor) {
      return db.transaction(async (tx) => {
        const row = await lockOrganizationRow(tx, orgId)
        if (!row) return null
        if (row.status === status) return { record: toOrganizationRecord(row), changed: false }
        const [updated] = await tx.update(organizations).set({ status }).where(eq(organizations.id, orgId)).returning()
        const action = status === 'suspended' ? 'organization.suspended' : 'organization.reactivated'
        await auditOrganization(tx, actor, orgId, action, { status: row.status }, { status, ...(reason === null ? {} : { reason }) })
        return { record: toOrganizationRecord(updated!), changed: true }
      })
    },

    async addCredit(credit, actor) {
      return db.transaction(async (tx) => {
        // The lock orders concurrent top-ups of one organization; each adds to the balance it sees.
        const organization = await lockOrganizationRow(tx, credit.orgId)
        if (!organization) return null
        const [inserted] = await tx
          .insert(creditTransactions)
          .values({ id: newId('credit'), orgId: credit.orgId, amountMicros: credit.amountMicros, kind: 'top_up', idempotencyKey: credit.idempotencyKey, note: credit.note })
          .onConflictDoNothing({ target: creditTransactions.idempotencyKey })
          .returning()
        if (!inserted) {
          const [recorded] = await tx.select().from(creditTransactions).where(eq(creditTransactions.idempotencyKey, credit.idempotencyKey))
          if (!recorded || recorded.orgId !== credit.orgId || recorded.amountMicros !== credit.amountMicros) {
            throw new GatewayError('conflict', 'This Idempotency-Key already recorded another credit; use a new key for a new top-up.', 'Idempotency-Key')
          }
          const record = { id: recorded.id, orgId: recorded.orgId, amountMicros: recorded.amountMicros, note: recorded.note, balanceMicros: organization.balanceMicros, createdAt: unixSeconds(recorded.createdAt) }
          return { record, changed: false }
        }
        const [updated] = await tx
          .update(organizations)
          .set({ balanceMicros: sql`${organizations.balanceMicros} + ${credit.amountMicros}` })
          .where(eq(organizations.id, credit.orgId))
          .returning({ balanceMicros: organizations.balanceMicros })
        const record = { id: inserted.id, orgId: inserted.orgId, amountMicros: inserted.amountMicros, note: inserted.note, balanceMicros: updated!.balanceMicros, createdAt: unixSeconds(inserted.createdAt) }
        await appendAudit(tx, actor, {
          orgId: credit.orgId,
          action: 'credit.added',
          targetType: 'credit_transaction',
          targetId: inserted.id,
          before: { balance_micros: organization.balanceMicros.toString() },
          after: { amount_micros: credit.amountMicros.toString(), balance_micros: updated!.balanceMicros.toString(), note: credit.note },
        })
        return { record, changed: true }
      })
    },

    async listCredits({ orgId, ...page }) {
      const [organization] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, orgId))
      if (!organization) return null
      const listed = await readPage(
        page,
        [creditTransactions.createdAt, creditTransactions.id],
        (cursor) =>
          db
            .select({ createdAt: creditTransactions.createdAt, id: creditTransactions.id })
            .from(creditTransactions)
            .where(and(eq(creditTransactions.id, cursor), eq(creditTransactions.orgId, orgId)))
            .$dynamic(),
        (after, limit) => db.select().from(creditTransactions).where(and(eq(creditTransactions.orgId, orgId), after)).orderBy(desc(creditTransactions.createdAt), desc(creditTransactions.id)).limit(limit),
        { newestFirst: true },
      )
      const actors = await creditActors(db, orgId, listed.items.map((row) => row.id))
      const items = listed.items.map((row) => ({
        id: row.id,
        orgId: row.orgId,
        kind: row.kind,
        amountMicros: row.amountMicros,
        note: row.note,
        actor: actors.get(row.id) ?? null,
        createdAt: unixSeconds(row.createdAt),
      }))
      return { items, hasMore: listed.hasMore }
    },

    async listUsers({ email, ...page }) {
      return readPage(
        page,
        [users.createdAt, users.id],
        (cursor) => db.select({ createdAt: users.createdAt, id: users.id }).from(users).where(eq(users.id, cursor)).$dynamic(),
        async (after, limit) => {
          const rows = await db
            .select()
            .from(users)
            .where(and(after, email === undefined ? undefined : eq(users.email, normalizeEmail(email))))
            .orderBy(asc(users.createdAt), asc(users.id))
            .limit(limit)
          return rows.map(toUserRecord)
        },
      )
    },

    async listUnbilledUsage({ orgId, ...page }) {
      // Every condition repeats the partial index's, so that only its rows are read.
      const unbilled = sql`${usageEvents.unbilledMicros} > 0`
      return readPage(
        page,
        [usageEvents.createdAt, usageEvents.requestId],
        (cursor) =>
          db
            .select({ createdAt: usageEvents.createdAt, id: usageEvents.requestId })
            .from(usageEvents)
            .where(and(eq(usageEvents.requestId, cursor), unbilled))
            .$dynamic(),
        async (after, limit) => {
          const rows = await db
            .select()
            .from(usageEvents)
            .where(and(unbilled, after, orgId === undefined ? undefined : eq(usageEvents.orgId, orgId)))
            .orderBy(asc(usageEvents.createdAt), asc(usageEvents.requestId))
            .limit(limit)
          return rows.map((row) => ({
            requestId: row.requestId,
            orgId: row.orgId,
            projectId: row.projectId,
            keyId: row.keyId,
            model: row.model,
            endpoint: row.endpoint,
            status: row.status,
            billedPromptTokens: row.promptTokens,
            billedCompletionTokens: row.completionTokens,
            billedMicros: row.costMicros,
            unbilledPromptTokens: row.unbilledPromptTokens,
            unbilledCompletionTokens: row.unbilledCompletionTokens,
            unbilledMicros: row.unbilledMicros,
            createdAt: unixSeconds(row.createdAt),
          }))
        },
      )
    },

    async setUserDisabled(userId, disabled, actor) {
      return db.transaction(async (tx) => {
        const [row] = await tx.select().from(users).where(and(eq(users.id, userId), isNull(users.deletedAt))).for('update')
        if (!row) return null
        if ((row.disabledAt !== null) === disabled) return { record: toUserRecord(row), changed: false }
        const now = new Date()
        const [updated] = await tx.update(users).set({ disabledAt: disabled ? now : null }).where(eq(users.id, userId)).returning()
        // While disabled, the session guard answers user_disabled; revoking here keeps the sessions
        // of before from coming back with the account.
        if (!disabled) await tx.update(sessions).set({ revokedAt: now }).where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)))
        await appendAudit(tx, actor, { orgId: null, action: disabled ? 'user.disabled' : 'user.enabled', targetType: 'user', targetId: userId, before: { disabled: !disabled }, after: { disabled } })
        return { record: toUserRecord(updated!), changed: true }
      })
    },

    listRetirements: () => readRetirements(db),

    async retireModel(retirement, actor) {
      return db.transaction(async (tx) => {
        const [previous] = await tx.select().from(modelRetirements).where(eq(modelRetirements.modelId, retirement.modelId)).for('update')
        const fields = { retiresOn: retirement.retiresOn, replacement: retirement.replacement }
        await tx.insert(modelRetirements).values({ modelId: retirement.modelId, ...fields }).onConflictDoUpdate({ target: modelRetirements.modelId, set: fields })
        await appendAudit(tx, actor, {
          orgId: null,
          action: 'model.retirement_scheduled',
          targetType: 'model',
          targetId: retirement.modelId,
          before: previous ? retirementFields(previous) : null,
          after: retirementFields(retirement),
        })
        return readRetirements(tx)
      })
    },

    async cancelRetirement(modelId, actor) {
      return db.transaction(async (tx) => {
        const [removed] = await tx.delete(modelRetirements).where(eq(modelRetirements.modelId, modelId)).returning()
        if (!removed) return null
        await appendAudit(tx, actor, { orgId: null, action: 'model.retirement_cancelled', targetType: 'model', targetId: modelId, before: retirementFields(removed), after: null })
        return readRetirements(tx)
      })
    },
  }
}
