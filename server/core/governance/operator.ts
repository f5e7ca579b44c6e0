import { GatewayError } from '@nilegate/shared/errors'
import { retirementInstantMs, type Catalog, type ModelRetirement } from '../catalog'
import type { UserRecord } from './accounts'
import type { AuditActor } from './audit'
import type { ChangeBus } from './changes'
import type { OrganizationRecord, PlanTier } from './organizations'
import type { Page, PageQuery } from './pages'
import { followStored } from './follow-stored'

/** What an operator may change of an organization; absent fields stay as they are. */
export interface OrganizationSettings {
  planTier?: PlanTier
  customRpmCeiling?: number | null
  allowedModels?: string[] | null
  requiresRegion?: string | null
}

/** A top-up as the ledger records it. */
export interface CreditRecord {
  id: string
  orgId: string
  amountMicros: bigint
  note: string | null
  /** The organization's balance after this credit (for a replay: now). */
  balanceMicros: bigint
  /** Unix seconds. */
  createdAt: number
}

/** What a row of an organization's credit ledger is: a top-up, the demo tenant's starting credit, an adjustment or a refund. */
export type CreditKind = 'demo_credit' | 'top_up' | 'adjustment' | 'refund'

/** A row of an organization's credit ledger, as operators read the organization's history. */
export interface CreditTransactionRecord {
  id: string
  orgId: string
  kind: CreditKind
  /** Positive adds credit, negative removes it. */
  amountMicros: bigint
  note: string | null
  /** Who added it, as its audit record names them; null for a credit without one (the demo tenant's). */
  actor: { type: AuditActor['type']; id: string; email: string | null } | null
  /** Unix seconds. */
  createdAt: number
}

export interface NewCredit {
  orgId: string
  amountMicros: bigint
  note: string | null
  /** The request's Idempotency-Key: unique in the ledger, so a retried top-up never credits twice. */
  idempotencyKey: string
}

/**
 * A request whose upstream reported more usage than its hold: billed the hold at most, the rest
 * recorded for operators and never charged (an upstream that miscounts or misreports).
 */
export interface UnbilledUsageRecord {
  requestId: string
  orgId: string
  projectId: string
  keyId: string
  model: string
  endpoint: 'chat.completions' | 'embeddings'
  status: number
  /** Tokens and cost billed, within the hold. */
  billedPromptTokens: number
  billedCompletionTokens: number
  billedMicros: bigint
  /** Tokens and cost reported beyond the hold. */
  unbilledPromptTokens: number
  unbilledCompletionTokens: number
  unbilledMicros: bigint
  /** Unix seconds. */
  createdAt: number
}

/** The result of a change that may have been a no-op (suspending a suspended organization, say). */
export interface Changed<T> {
  record: T
  changed: boolean
}

/** Platform-operator operations under /v1/admin/* and the `operator` command. */
export interface OperatorStore {
  /** Sets users.is_operator by e-mail address (audited when it changed); null for an unknown address. */
  setOperator(email: string, isOperator: boolean, actor: AuditActor): Promise<Changed<UserRecord> | null>

  /**
   * Every organization, oldest first, optionally of one status, and optionally matching `search`:
   * its id exactly, or a part of its name in any case. `after` is an organization id.
   */
  listOrganizations(query: PageQuery & { status?: OrganizationRecord['status']; search?: string }): Promise<Page<OrganizationRecord>>
  /** Applies the settings, with one audit record per changed setting; null for an unknown organization. */
  updateOrganizationSettings(orgId: string, settings: OrganizationSettings, actor: AuditActor): Promise<Changed<OrganizationRecord> | null>
  /** Suspends or reactivates; `reason` goes into the audit record. Null for an unknown organization. */
  setOrganizationStatus(orgId: string, status: OrganizationRecord['status'], reason: string | null, actor: AuditActor): Promise<Changed<OrganizationRecord> | null>
  /**
   * Records a top-up in the ledger and adds it to organizations.balance_micros, in one transaction.
   * A key the ledger already holds for the same organization and amount is a replay: nothing is
   * written and `changed` is false. The same key with another organization or amount is 409 conflict.
   * Null for an unknown organization.
   */
  addCredit(credit: NewCredit, actor: AuditActor): Promise<Changed<CreditRecord> | null>
  /** An organization's credit ledger, newest first; `after` is a credit id of it. Null for an unknown organization. */
  listCredits(query: PageQuery & { orgId: string }): Promise<Page<CreditTransactionRecord> | null>

  /** Users, oldest first, optionally only the one with this e-mail address; `after` is a user id. */
  listUsers(query: PageQuery & { email?: string }): Promise<Page<UserRecord>>
  /**
   * Disables or enables an account; null for an unknown or deleted user. A disabled user's sessions
   * answer user_disabled; enabling revokes every session opened before, so none of them comes back.
   */
  setUserDisabled(userId: string, disabled: boolean, actor: AuditActor): Promise<Changed<UserRecord> | null>

  /**
   * The requests billed less than their upstream reported, oldest first, optionally of one
   * organization; `after` is a request id.
   */
  listUnbilledUsage(query: PageQuery & { orgId?: string }): Promise<Page<UnbilledUsageRecord>>

  /** Every stored retirement. */
  listRetirements(): Promise<ModelRetirement[]>
  /** Stores (or replaces) a model's retirement; returns every stored retirement after the change. */
  retireModel(retirement: ModelRetirement, actor: AuditActor): Promise<ModelRetirement[]>
  /** Forgets a model's retirement; null when it had none, else every stored retirement after the change. */
  cancelRetirement(modelId: string, actor: AuditActor): Promise<ModelRetirement[] | null>
}

/**
 * 400 unless a retirement can be applied: the model is in the catalog and not retired by the
 * catalog file, the date is a real day, and the replacement is another live model of the same
 * modality. 404 for a model the catalog lacks.
 */
export function checkRetirement(catalog: Catalog, retirement: ModelRetirement): void {
  const model = catalog.find(retirement.modelId)
  if (!model) throw new GatewayError('not_found', `The model '${retirement.modelId}' is not in the catalog.`, 'model_id')
  if (catalog.isRetiredByFile(model.id)) {
    throw new GatewayError('invalid_request', `The model '${retirement.modelId}' is retired by the catalog file; change the file to change its retirement.`, 'model_id')
  }
  const instant = retirementInstantMs(retirement.retiresOn)
  if (!Number.isFinite(instant) || new Date(instant).toISOString().slice(0, 10) !== retirement.retiresOn) {
    throw new GatewayError('invalid_request', `retires_on must be a date as YYYY-MM-DD; got '${retirement.retiresOn}'.`, 'retires_on')
  }
  if (retirement.replacement === null) return
  const replacement = catalog.find(retirement.replacement)
  if (!replacement || replacement.status !== 'live' || replacement.id === model.id || replacement.modality !== model.modality) {
    throw new GatewayError('invalid_request', `The replacement must be another live ${model.modality} model of the catalog; '${retirement.replacement}' is not.`, 'replacement')
  }
}

/** 400 unless every id of an organization's model allow-list is a catalog model. */
export function checkAllowedModels(catalog: Catalog, modelIds: readonly string[]): void {
  const unknown = modelIds.findIndex((id) => !catalog.find(id))
  if (unknown !== -1) throw new GatewayError('invalid_request', `'${modelIds[unknown]}' is not a model of the catalog.`, `allowed_models[${unknown}]`)
}

/** Keeps this gateway's catalog in step with the stored retirements (see `followStored`). */
export function followRetirements(catalog: Catalog, store: Pick<OperatorStore, 'listRetirements'>, changes: ChangeBus, options: { refreshMs?: number } = {}): Promise<() => void> {
  return followStored({ kind: 'model_retirements', what: 'the model retirements', read: () => store.listRetirements(), apply: (retirements) => catalog.applyRetirements(retirements), changes, ...options })
}

/** What granting or revoking the operator flag changed; null when no account has the address. */
export type OperatorChange = { user: { id: string; email: string }; changed: boolean } | null

/** Who the audit trail names for changes made from the command line. */
const commandLineActor: AuditActor = { type: 'system', id: 'system', email: null, ip: null, requestId: null }

/** Sets or clears the operator flag as `bun server/cli.ts operator` does, directly or through a running gateway. */
export async function setOperatorFlag(store: Pick<OperatorStore, 'setOperator'>, email: string, grant: boolean): Promise<OperatorChange> {
  const result = await store.setOperator(email, grant, commandLineActor)
  return result && { user: { id: result.record.id, email: result.record.email }, changed: result.changed }
}
