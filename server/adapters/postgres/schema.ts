import { sql } from 'drizzle-orm'
import { bigint, bigserial, boolean, check, date, foreignKey, index, integer, jsonb, pgTable, primaryKey, smallint, text, timestamp, unique } from 'drizzle-orm/pg-core'

/** Plan tiers; each has a default RPM ceiling. */
export type PlanTier = 'free' | 'developer' | 'team' | 'enterprise'
export type OrganizationStatus = 'active' | 'suspended'
export type MembershipRole = 'owner' | 'admin' | 'member' | 'reader'
/** Why credit moved. Open-ended on purpose: the billing ledger adds kinds. */
export type CreditTransactionKind = 'demo_credit' | 'top_up' | 'adjustment' | 'refund'

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow()
const nullableTimestamp = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })
const micros = (name: string) => bigint(name, { mode: 'bigint' })

export const organizations = pgTable(
  'organizations',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    planTier: text('plan_tier').$type<PlanTier>().notNull().default('developer'),
    /** Replaces the plan's RPM ceiling for every key of the organization when set. */
    customRpmCeiling: integer('custom_rpm_ceiling'),
    status: text('status').$type<OrganizationStatus>().notNull().default('active'),
    /** Live prepaid credit in micro-EGP; the ledger is the record it is reconciled against. */
    balanceMicros: micros('balance_micros').notNull().default(sql`0`),
    /** IANA zone in which monthly caps reset. */
    billingTimeZone: text('billing_time_zone').notNull().default('Africa/Cairo'),
    /**
     * From when usage_rollup_days holds whole days of `billingTimeZone`: the first local midnight
     * at least an hour after the zone last changed (a trigger of migration 0010 moves it); null for
     * a zone never changed, whose every day is whole. Earlier days are summed from hours and
     * quarter-hours.
     */
    dayRollupsFrom: nullableTimestamp('day_rollups_from'),
    /** Data residency: only deployments in this region may serve the organization. */
    requiresRegion: text('requires_region'),
    /** Model ids the organization may call, set by an operator; null allows every catalog model. */
    allowedModels: text('allowed_models').array(),
    createdAt: createdAt(),
  },
  (table) => [
    check('organizations_plan_tier_check', sql`${table.planTier} in ('free', 'developer', 'team', 'enterprise')`),
    check('organizations_status_check', sql`${table.status} in ('active', 'suspended')`),
    check('organizations_custom_rpm_ceiling_check', sql`${table.customRpmCeiling} > 0`),
  ],
)

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    /** Stored lower-cased so that uniqueness ignores case. */
    email: text('email').notNull().unique('users_email_unique'),
    name: text('name'),
    passwordHash: text('password_hash').notNull(),
    emailVerifiedAt: nullableTimestamp('email_verified_at'),
    isOperator: boolean('is_operator').notNull().default(false),
    disabledAt: nullableTimestamp('disabled_at'),
    /** The account was deleted by its owner; its sessions then answer user_not_found. */
    deletedAt: nullableTimestamp('deleted_at'),
    createdAt: createdAt(),
  },
  (table) => [check('users_email_lower_case_check', sql`${table.email} = lower(${table.email})`)],
)

export const memberships = pgTable(
  'memberships',
  {
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role').$type<MembershipRole>().notNull(),
    createdAt: createdAt(),
  },
  (table) => [
    primaryKey({ name: 'memberships_pkey', columns: [table.orgId, table.userId] }),
    index('memberships_user_id_index').on(table.userId),
    check('memberships_role_check', sql`${table.role} in ('owner', 'admin', 'member', 'reader')`),
  ],
)

export const projects = pgTable(
  'projects',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    monthlySpendCapMicros: micros('monthly_spend_cap_micros'),
    rpmOverride: integer('rpm_override'),
    /** Model ids the project may call; null allows every model of the organization. */
    enabledModels: text('enabled_models').array(),
    archivedAt: nullableTimestamp('archived_at'),
    createdAt: createdAt(),
  },
  (table) => [
    unique('projects_org_id_name_unique').on(table.orgId, table.name),
    // Target of api_keys' composite foreign key: a key's project belongs to the key's organization.
    unique('projects_id_org_id_unique').on(table.id, table.orgId),
    check('projects_rpm_override_check', sql`${table.rpmOverride} > 0`),
    check('projects_monthly_spend_cap_check', sql`${table.monthlySpendCapMicros} >= 0`),
  ],
)

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    projectId: text('project_id').notNull(),
    name: text('name').notNull(),
    /** SHA-256 hex of the secret; the secret itself is never stored. */
    secretHash: text('secret_hash').notNull().unique('api_keys_secret_hash_unique'),
    /** What lists show, like `sk-AbCd...WxYz`. */
    displayPrefix: text('display_prefix').notNull(),
    createdByUserId: text('created_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    createdAt: createdAt(),
    expiresAt: nullableTimestamp('expires_at'),
    revokedAt: nullableTimestamp('revoked_at'),
    lastUsedAt: nullableTimestamp('last_used_at'),
    rpmLimit: integer('rpm_limit'),
    monthlySpendCapMicros: micros('monthly_spend_cap_micros'),
    /** CIDRs (v4 and v6) the key may be used from; empty allows every address. */
    ipAllowList: text('ip_allow_list').array().notNull().default(sql`'{}'::text[]`),
    scopes: text('scopes').array().notNull().default(sql`'{}'::text[]`),
  },
  (table) => [
    foreignKey({
      name: 'api_keys_project_in_org_fk',
      columns: [table.projectId, table.orgId],
      foreignColumns: [projects.id, projects.orgId],
    }).onDelete('cascade'),
    index('api_keys_org_id_index').on(table.orgId),
    index('api_keys_project_id_index').on(table.projectId),
    check('api_keys_rpm_limit_check', sql`${table.rpmLimit} > 0`),
    check('api_keys_monthly_spend_cap_check', sql`${table.monthlySpendCapMicros} >= 0`),
  ],
)

export const creditTransactions = pgTable(
  'credit_transactions',
  {
    id: text('id').primaryKey(),
    // No cascade: deleting an organization must not silently delete its money records.
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    /** Positive adds credit, negative removes it. */
    amountMicros: micros('amount_micros').notNull(),
    kind: text('kind').$type<CreditTransactionKind>().notNull(),
    /** Makes a retried grant a no-op; null for grants that need no such guard. */
    idempotencyKey: text('idempotency_key').unique('credit_transactions_idempotency_key_unique'),
    note: text('note'),
    createdAt: createdAt(),
  },
  (table) => [index('credit_transactions_org_id_created_at_index').on(table.orgId, table.createdAt)],
)

/**
 * One row per request, written in batches off the hot path. No foreign keys: an append-only log
 * whose batch insert must never fail because of one odd row, and which outlives what it refers to.
 *
 * Partitioned by month of `created_at` (UTC) in migration 0010, which drizzle-kit cannot express:
 * `usage_events_yYYYYmMM` partitions are created ahead by the gateway (ledger-partitions.ts), a
 * default partition takes rows no month holds, and old months leave whole (`ledger retain`). The
 * key holds the partition column, so a request id is unique together with its start, which every
 * write of its row repeats. Rows are never updated or deleted (refused by triggers): balances,
 * month spends and reports come from the sums the insert triggers keep beside them
 * (usage_totals and the usage_rollup_* tables), and removing raw rows never moves them.
 */
export const usageEvents = pgTable(
  'usage_events',
  {
    requestId: text('request_id').notNull(),
    orgId: text('org_id').notNull(),
    projectId: text('project_id').notNull(),
    keyId: text('key_id').notNull(),
    model: text('model').notNull(),
    endpoint: text('endpoint').$type<'chat.completions' | 'embeddings'>().notNull(),
    stream: boolean('stream').notNull(),
    promptTokens: integer('prompt_tokens').notNull(),
    completionTokens: integer('completion_tokens').notNull(),
    costMicros: micros('cost_micros').notNull(),
    /**
     * Usage an upstream reported beyond the request's hold: never charged (cost_micros is what was
     * billed, and what balances and caps count), kept for operators (GET /v1/admin/unbilled_usage).
     */
    unbilledPromptTokens: integer('unbilled_prompt_tokens').notNull().default(0),
    unbilledCompletionTokens: integer('unbilled_completion_tokens').notNull().default(0),
    unbilledMicros: micros('unbilled_micros').notNull().default(sql`0`),
    status: integer('status').notNull(),
    latencyMs: integer('latency_ms').notNull(),
    region: text('region'),
    /** When the request started: its row is dated, partitioned and rolled up by it. */
    createdAt: createdAt(),
  },
  (table) => [
    primaryKey({ name: 'usage_events_pkey', columns: [table.orgId, table.requestId, table.createdAt] }),
    index('usage_events_org_id_created_at_index').on(table.orgId, table.createdAt),
    // Operators list the few rows with unbilled usage, newest first, among all the others.
    index('usage_events_unbilled_index').on(table.createdAt, table.requestId).where(sql`${table.unbilledMicros} > 0`),
  ],
)

/**
 * Usage rows summed per organization and day (UTC), kept by the insert trigger of usage_events in
 * the transaction that writes the rows: an organization's balance is every credit minus every
 * debit, and reads these sums instead of every row the organization ever made. Each writing
 * transaction adds to one of 16 shards of the day, so that gateways writing batches of one
 * organization at once do not queue behind one row's lock.
 */
export const usageTotals = pgTable(
  'usage_totals',
  {
    orgId: text('org_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    shard: smallint('shard').notNull(),
    costMicros: micros('cost_micros').notNull(),
    requests: bigint('requests', { mode: 'number' }).notNull(),
  },
  (table) => [primaryKey({ columns: [table.orgId, table.day, table.shard] })],
)

/** The sums every usage rollup keeps of its rows. */
const rollupSums = () => ({
  requests: bigint('requests', { mode: 'number' }).notNull(),
  promptTokens: bigint('prompt_tokens', { mode: 'number' }).notNull(),
  completionTokens: bigint('completion_tokens', { mode: 'number' }).notNull(),
  costMicros: micros('cost_micros').notNull(),
})

/** What usage is grouped by within a rollup's period. */
const rollupGroup = () => ({
  projectId: text('project_id').notNull(),
  keyId: text('key_id').notNull(),
  model: text('model').notNull(),
  endpoint: text('endpoint').$type<'chat.completions' | 'embeddings'>().notNull(),
})

/**
 * Usage summed per organization, period, project, key, model and endpoint, kept by the insert
 * trigger of usage_events with the rows (migration 0010), and never taken back: usage reports,
 * month spends and rebuilds of admission counters read these instead of raw rows. Quarter-hours
 * and hours start on UTC multiples of their length, so they serve every time zone (every zone's
 * offset is a whole number of quarter-hours); days are local days of the organization's billing
 * time zone at the time of writing (organizations.day_rollups_from says from when they are whole;
 * usage-pieces.ts and usage-rollups.ts say which rows make up a span).
 */
const slotRollup = (name: string) =>
  pgTable(
    name,
    {
      orgId: text('org_id').notNull(),
      /** The period's start. */
      slot: timestamp('slot', { withTimezone: true, mode: 'date' }).notNull(),
      ...rollupGroup(),
      ...rollupSums(),
    },
    (table) => [primaryKey({ name: `${name}_pkey`, columns: [table.orgId, table.slot, table.projectId, table.keyId, table.model, table.endpoint] })],
  )

export const usageRollupQuarters = slotRollup('usage_rollup_quarters')
export const usageRollupHours = slotRollup('usage_rollup_hours')

export const usageRollupDays = pgTable(
  'usage_rollup_days',
  {
    orgId: text('org_id').notNull(),
    /** The billing time zone the row's day is a day of. */
    timeZone: text('time_zone').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    ...rollupGroup(),
    ...rollupSums(),
  },
  (table) => [
    primaryKey({ name: 'usage_rollup_days_pkey', columns: [table.orgId, table.timeZone, table.day, table.projectId, table.keyId, table.model, table.endpoint] }),
  ],
)

/**
 * Up to when raw usage rows were removed (`ledger retain`): one row, absent until a first removal.
 * Reports say from when they rest on rows as well as rollups.
 */
export const usageRetention = pgTable(
  'usage_retention',
  {
    singleton: boolean('singleton').primaryKey().default(true),
    /** Raw usage rows created before this were removed; their sums remain. */
    rawFrom: timestamp('raw_from', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [check('usage_retention_singleton_check', sql`${table.singleton}`)],
)

/** Dashboard sessions: opaque access tokens, stored as SHA-256 hashes. */
export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull().unique('sessions_token_hash_unique'),
    createdAt: createdAt(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    revokedAt: nullableTimestamp('revoked_at'),
    ip: text('ip'),
    userAgent: text('user_agent'),
  },
  (table) => [index('sessions_user_id_index').on(table.userId)],
)

/** A table of one-time tokens mailed to a user, stored as SHA-256 hashes, spent once. */
function oneTimeTokens(name: string) {
  return pgTable(
    name,
    {
      tokenHash: text('token_hash').primaryKey(),
      userId: text('user_id')
        .notNull()
        .references(() => users.id, { onDelete: 'cascade' }),
      createdAt: createdAt(),
      expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
      usedAt: nullableTimestamp('used_at'),
    },
    (table) => [index(`${name}_user_id_index`).on(table.userId)],
  )
}

/** One-time e-mail verification tokens (valid a day). */
export const emailVerifications = oneTimeTokens('email_verifications')

/** One-time password reset tokens (valid an hour). */
export const passwordResets = oneTimeTokens('password_resets')

/** Mail the gateway sends: delivered over SMTP when configured, otherwise kept here and logged. */
export const mailOutbox = pgTable('mail_outbox', {
  id: text('id').primaryKey(),
  toAddress: text('to_address').notNull(),
  subject: text('subject').notNull(),
  body: text('body').notNull(),
  createdAt: createdAt(),
  sentAt: nullableTimestamp('sent_at'),
  error: text('error'),
})

/** Invitations to join an organization with a role; accepted with the token mailed to the address. */
export const invites = pgTable(
  'invites',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** Lower-cased. */
    email: text('email').notNull(),
    role: text('role').$type<MembershipRole>().notNull(),
    tokenHash: text('token_hash').notNull().unique('invites_token_hash_unique'),
    invitedByUserId: text('invited_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    createdAt: createdAt(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    acceptedAt: nullableTimestamp('accepted_at'),
    revokedAt: nullableTimestamp('revoked_at'),
  },
  (table) => [
    index('invites_org_id_index').on(table.orgId),
    check('invites_role_check', sql`${table.role} in ('owner', 'admin', 'member', 'reader')`),
  ],
)

export type AuditActorType = 'user' | 'api_key' | 'operator' | 'system'

/**
 * The audit trail: append-only (a trigger refuses UPDATE and DELETE). `seq` orders records; `id`
 * is what clients page with. `changes` holds before/after of the changed fields, never a secret.
 */
export const auditLogs = pgTable(
  'audit_logs',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    id: text('id').notNull().unique('audit_logs_id_unique'),
    /** Null for platform-level records (an operator disabling a user, say). */
    orgId: text('org_id'),
    projectId: text('project_id'),
    actorType: text('actor_type').$type<AuditActorType>().notNull(),
    actorId: text('actor_id').notNull(),
    actorEmail: text('actor_email'),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id').notNull(),
    changes: jsonb('changes').$type<{ before: Record<string, unknown> | null; after: Record<string, unknown> | null }>(),
    ip: text('ip'),
    requestId: text('request_id'),
    createdAt: createdAt(),
  },
  (table) => [
    index('audit_logs_org_id_seq_index').on(table.orgId, table.seq),
    check('audit_logs_actor_type_check', sql`${table.actorType} in ('user', 'api_key', 'operator', 'system')`),
  ],
)

/** First answers of POST management requests by Idempotency-Key, replayed for the same body. */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    /** Whose key it is: a user id, so two users never share a key space. */
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    /** SHA-256 of method, path and body. */
    fingerprint: text('fingerprint').notNull(),
    /** Null while the first request is still running. */
    status: integer('status'),
    body: jsonb('body'),
    createdAt: createdAt(),
  },
  (table) => [primaryKey({ name: 'idempotency_keys_pkey', columns: [table.scope, table.key] })],
)

/** Retirements decided by operators; they override the catalog file's status and replacement. */
export const modelRetirements = pgTable('model_retirements', {
  modelId: text('model_id').primaryKey(),
  /** ISO date (YYYY-MM-DD) from which the model answers model_sunset. */
  retiresOn: text('retires_on').notNull(),
  replacement: text('replacement'),
  createdAt: createdAt(),
})

/**
 * Upstream deployments added by operators; each joins its catalog model's deployments from the
 * catalog file. The upstream's key is named by `api_key_env` and never stored.
 */
export const deployments = pgTable(
  'deployments',
  {
    id: text('id').primaryKey(),
    /** A catalog model id; not a foreign key, since the catalog lives in a file. */
    modelId: text('model_id').notNull(),
    provider: text('provider').$type<'simulator' | 'openai-compatible'>().notNull(),
    /** Null for the simulator. */
    baseUrl: text('base_url'),
    upstreamModel: text('upstream_model').notNull(),
    region: text('region').notNull(),
    weight: integer('weight').notNull(),
    /** Null for no limit. */
    maxConcurrent: integer('max_concurrent'),
    connectTimeoutMs: integer('connect_timeout_ms').notNull(),
    firstTokenTimeoutMs: integer('first_token_timeout_ms').notNull(),
    idleTimeoutMs: integer('idle_timeout_ms').notNull(),
    totalTimeoutMs: integer('total_timeout_ms').notNull(),
    apiKeyEnv: text('api_key_env'),
    /** The role developer messages are sent upstream as. */
    developerRole: text('developer_role').$type<'developer' | 'system'>().notNull().default('developer'),
    createdAt: createdAt(),
  },
  (table) => [
    index('deployments_model_id_idx').on(table.modelId),
    check('deployments_provider_check', sql`${table.provider} in ('simulator', 'openai-compatible')`),
    check('deployments_weight_check', sql`${table.weight} > 0`),
    check('deployments_max_concurrent_check', sql`${table.maxConcurrent} > 0`),
    check('deployments_developer_role_check', sql`${table.developerRole} in ('developer', 'system')`),
  ],
)
