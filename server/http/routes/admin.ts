import { Elysia, t } from 'elysia'
import { Type, type TSchema } from '@sinclair/typebox'
import { GatewayError } from '@nilegate/shared/errors'
import { maxMicros, type AdmissionStore } from '../../core/admission'
import type { UserRecord } from '../../core/governance/accounts'
import { checkAllowedModels, checkRetirement, type CreditRecord, type UnbilledUsageRecord } from '../../core/governance/operator'
import { toModelObject } from '../../core/model-view'
import { formatEgp, parseEgp } from '../../core/money'
import { idempotent } from '../idempotency'
import { operatorAccess, type ManagementDeps } from '../management'
import type { RouteTable } from '../plugins/error-handler'
import { refuseUnstorableText } from '../plugins/storable-text'
import { BodyProblem } from '../request-body'
import { userObject } from './auth-account'
import { ListQuery, listObject, pageQuery } from '../management-fields'
import { organizationObject } from './organizations'

export const adminRouteTable: RouteTable = [
  { pattern: /^\/v1\/admin\/organizations\/?$/, methods: ['GET'] },
  { pattern: /^\/v1\/admin\/organizations\/[^/]+\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/admin\/organizations\/[^/]+\/(suspend|reactivate)\/?$/, methods: ['POST'] },
  // .../credits (GET and POST) is in admin-organization-records.ts's table.
  { pattern: /^\/v1\/admin\/users\/?$/, methods: ['GET'] },
  { pattern: /^\/v1\/admin\/unbilled_usage\/?$/, methods: ['GET'] },
  { pattern: /^\/v1\/admin\/users\/[^/]+\/(disable|enable)\/?$/, methods: ['POST'] },
  { pattern: /^\/v1\/admin\/models\/?$/, methods: ['GET'] },
  { pattern: /^\/v1\/admin\/models\/.+\/retire\/?$/, methods: ['POST'] },
  { pattern: /^\/v1\/admin\/models\/.+\/retirement\/?$/, methods: ['DELETE'] },
]

/** A user as operators see it: with the state the account is in. */
function adminUserObject(user: UserRecord) {
  return { ...userObject(user), is_operator: user.isOperator, status: user.deleted ? 'deleted' : user.disabled ? 'disabled' : 'active' }
}

function creditObject(credit: CreditRecord) {
  return {
    object: 'organization.credit' as const,
    id: credit.id,
    organization_id: credit.orgId,
    amount_egp: formatEgp(credit.amountMicros),
    balance_egp: formatEgp(credit.balanceMicros),
    note: credit.note,
    created_at: credit.createdAt,
  }
}

/** A request billed less than its upstream reported: what was reported, billed and left unbilled. */
function unbilledUsageObject(record: UnbilledUsageRecord) {
  return {
    object: 'admin.unbilled_usage' as const,
    id: record.requestId,
    organization_id: record.orgId,
    project_id: record.projectId,
    api_key_id: record.keyId,
    model: record.model,
    endpoint: record.endpoint,
    status: record.status,
    reported_prompt_tokens: record.billedPromptTokens + record.unbilledPromptTokens,
    reported_completion_tokens: record.billedCompletionTokens + record.unbilledCompletionTokens,
    billed_prompt_tokens: record.billedPromptTokens,
    billed_completion_tokens: record.billedCompletionTokens,
    billed_egp: formatEgp(record.billedMicros),
    unbilled_prompt_tokens: record.unbilledPromptTokens,
    unbilled_completion_tokens: record.unbilledCompletionTokens,
    unbilled_egp: formatEgp(record.unbilledMicros),
    created_at: record.createdAt,
  }
}

const nullable = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()])

const ListOrganizations = t.Object(
  {
    ...ListQuery.properties,
    status: t.Optional(t.Union([t.Literal('active'), t.Literal('suspended')])),
    q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'Keeps the organization with this id, and those whose name contains the text in any case.' })),
  },
  { additionalProperties: false },
)
const ListUnbilledUsage = t.Object({ ...ListQuery.properties, organization_id: t.Optional(t.String({ minLength: 1, maxLength: 200 })) }, { additionalProperties: false })
const ListUsers = t.Object({ ...ListQuery.properties, email: t.Optional(t.String({ minLength: 1, maxLength: 254 })) }, { additionalProperties: false })
const UpdateOrganization = t.Object(
  {
    plan_tier: t.Optional(t.Union([t.Literal('free'), t.Literal('developer'), t.Literal('team'), t.Literal('enterprise')])),
    custom_rpm_ceiling: t.Optional(nullable(Type.Integer({ minimum: 1, maximum: 2_147_483_647, error: 'must be a positive integer or null' }))),
    allowed_models: t.Optional(nullable(t.Array(t.String({ minLength: 1, maxLength: 200 }), { maxItems: 1_000, uniqueItems: true }))),
    requires_region: t.Optional(nullable(t.String({ minLength: 1, maxLength: 64 }))),
  },
  { additionalProperties: false },
)
const Suspend = t.Object({ reason: t.Optional(t.String({ minLength: 1, maxLength: 1_000 })) }, { additionalProperties: false })
const NoFields = t.Object({}, { additionalProperties: false })
const AddCredit = t.Object(
  {
    amount_egp: t.String({ pattern: '^\\d{1,10}(\\.\\d{1,6})?$', error: 'must be a positive amount in EGP as a decimal string with at most 6 decimals, like "250" or "12.5"' }),
    note: t.Optional(t.String({ minLength: 1, maxLength: 1_000 })),
  },
  { additionalProperties: false },
)
const Retire = t.Object(
  {
    retires_on: t.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', error: 'must be a date as YYYY-MM-DD' }),
    replacement: t.Optional(nullable(t.String({ minLength: 1, maxLength: 200 }))),
  },
  { additionalProperties: false },
)

function organizationNotFound(orgId: string): GatewayError {
  return new GatewayError('not_found', `No organization '${orgId}'.`, 'id')
}

function userNotFound(userId: string): GatewayError {
  return new GatewayError('not_found', `No user '${userId}'.`, 'id')
}

/** A POST without any body reads as `{}`; a body that is there must be a JSON object. */
export function bodilessAsEmpty(context: { body: unknown; request: Request }): void {
  if (!(context.body instanceof BodyProblem)) return
  const length = context.request.headers.get('content-length')
  if (length === '0' || (length === null && context.request.body === null)) context.body = {}
  else throw context.body.error
}

/** The model id in `/v1/admin/models/<id>/<action>`; ids contain '/', raw or as %2F. */
function modelIdOf(path: string, action: 'retire' | 'retirement'): string {
  const suffix = `/${action}`
  const trimmed = path.endsWith('/') ? path.slice(0, -1) : path
  if (!trimmed.endsWith(suffix) || trimmed.length === suffix.length) throw new GatewayError('not_found', `No route /v1/admin/models/${path}.`)
  let modelId: string
  try {
    modelId = decodeURIComponent(trimmed.slice(0, -suffix.length))
  } catch {
    throw new GatewayError('invalid_request', 'The model id in the path is not valid percent-encoding.', 'model_id')
  }
  // The wildcard reaches the routes undecoded, past the check of every other path parameter.
  refuseUnstorableText({ params: { model_id: modelId } })
  return modelId
}

/**
 * Adds a committed top-up to the live admission balance. The ledger already holds it, so a failure
 * here (Redis unreachable) is logged rather than answered: the answer would make the operator retry
 * a top-up that happened, and the reconciler brings the live balance in step with the ledger.
 */
async function creditLiveBalance(admission: AdmissionStore, orgId: string, amountMicros: bigint): Promise<void> {
  try {
    await admission.credit(orgId, amountMicros)
  } catch (error) {
    console.error(`crediting the live balance of ${orgId} failed; the ledger has the top-up and reconciliation will apply it`, error)
  }
}

/**
 * The platform operators' API under /v1/admin/*: organizations (settings, suspension, credit),
 * users (disable, enable), model retirements, and the usage upstreams reported beyond holds.
 * Changes that API keys or the catalog depend on are announced on the change bus once committed.
 */
export function adminRoutes(deps: ManagementDeps) {
  const operator = deps.governance.operator
  const announce = (orgId: string) => deps.changes.publish({ kind: 'organization', orgId })

  return new Elysia({ normalize: false })
    .use(operatorAccess(deps))
    .onTransform(bodilessAsEmpty)
    .get(
      '/v1/admin/organizations',
      async ({ query }) => {
        const search = query.q?.trim() || undefined
        const page = await operator.listOrganizations({ ...pageQuery(query), status: query.status, search })
        return listObject(page, page.items.map((organization) => organizationObject(organization, null)))
      },
      { query: ListOrganizations },
    )
    .get('/v1/admin/organizations/:id', async ({ params }) => {
      const organization = await deps.governance.organizations.getOrganization(params.id)
      if (!organization) throw organizationNotFound(params.id)
      return organizationObject(organization, null)
    })
    .post(
      '/v1/admin/organizations/:id',
      ({ params, body, principal, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          if (body.allowed_models) checkAllowedModels(deps.catalog, body.allowed_models)
          const settings = { planTier: body.plan_tier, customRpmCeiling: body.custom_rpm_ceiling, allowedModels: body.allowed_models, requiresRegion: body.requires_region }
          const result = await operator.updateOrganizationSettings(params.id, settings, principal.actor)
          if (!result) throw organizationNotFound(params.id)
          if (result.changed) await announce(params.id)
          return organizationObject(result.record, null)
        }),
      { body: UpdateOrganization },
    )
    .post(
      '/v1/admin/organizations/:id/suspend',
      ({ params, body, principal, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const result = await operator.setOrganizationStatus(params.id, 'suspended', body.reason ?? null, principal.actor)
          if (!result) throw organizationNotFound(params.id)
          if (result.changed) await announce(params.id)
          return organizationObject(result.record, null)
        }),
      { body: Suspend },
    )
    .post(
      '/v1/admin/organizations/:id/reactivate',
      ({ params, body, principal, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const result = await operator.setOrganizationStatus(params.id, 'active', null, principal.actor)
          if (!result) throw organizationNotFound(params.id)
          if (result.changed) await announce(params.id)
          return organizationObject(result.record, null)
        }),
      { body: NoFields },
    )
    .post(
      '/v1/admin/organizations/:id/credits',
      ({ params, body, principal, request, set }) => {
        const idempotencyKey = request.headers.get('idempotency-key')
        if (idempotencyKey === null) throw new GatewayError('invalid_request', 'A top-up needs an Idempotency-Key header, so that a retry never credits twice.', 'Idempotency-Key')
        return idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const amountMicros = parseEgp(body.amount_egp)
          if (amountMicros <= 0n || amountMicros > maxMicros) throw new GatewayError('invalid_request', `amount_egp must be above 0 and at most ${formatEgp(maxMicros)}.`, 'amount_egp')
          const result = await operator.addCredit({ orgId: params.id, amountMicros, note: body.note ?? null, idempotencyKey }, principal.actor)
          if (!result) throw organizationNotFound(params.id)
          if (result.changed) await creditLiveBalance(deps.admission, params.id, amountMicros)
          set.status = 201
          return creditObject(result.record)
        })
      },
      { body: AddCredit },
    )
    .get(
      '/v1/admin/users',
      async ({ query }) => {
        const page = await operator.listUsers({ ...pageQuery(query), email: query.email })
        return listObject(page, page.items.map(adminUserObject))
      },
      { query: ListUsers },
    )
    .get(
      '/v1/admin/unbilled_usage',
      async ({ query }) => {
        const page = await operator.listUnbilledUsage({ ...pageQuery(query), orgId: query.organization_id })
        return listObject(page, page.items.map(unbilledUsageObject))
      },
      { query: ListUnbilledUsage },
    )
    .post(
      '/v1/admin/users/:id/disable',
      ({ params, body, principal, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          if (params.id === principal.user.id) throw new GatewayError('invalid_request', 'Operators cannot disable their own account.', 'id')
          const result = await operator.setUserDisabled(params.id, true, principal.actor)
          if (!result) throw userNotFound(params.id)
          return adminUserObject(result.record)
        }),
      { body: NoFields },
    )
    .post(
      '/v1/admin/users/:id/enable',
      ({ params, body, principal, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const result = await operator.setUserDisabled(params.id, false, principal.actor)
          if (!result) throw userNotFound(params.id)
          return adminUserObject(result.record)
        }),
      { body: NoFields },
    )
    // The whole catalog, retired models and those no organization may use included.
    .get('/v1/admin/models', () => ({ object: 'list' as const, data: deps.catalog.models.map(toModelObject) }))
    .post(
      '/v1/admin/models/*',
      ({ params, body, principal, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          const retirement = { modelId: modelIdOf(params['*'], 'retire'), retiresOn: body.retires_on, replacement: body.replacement ?? null }
          checkRetirement(deps.catalog, retirement)
          deps.catalog.applyRetirements(await operator.retireModel(retirement, principal.actor))
          await deps.changes.publish({ kind: 'model_retirements' })
          return toModelObject(deps.catalog.find(retirement.modelId)!)
        }),
      { body: Retire },
    )
    .delete('/v1/admin/models/*', async ({ params, principal }) => {
      const modelId = modelIdOf(params['*'], 'retirement')
      const retirements = await operator.cancelRetirement(modelId, principal.actor)
      if (!retirements) throw new GatewayError('not_found', `The model '${modelId}' has no stored retirement.`, 'model_id')
      deps.catalog.applyRetirements(retirements)
      await deps.changes.publish({ kind: 'model_retirements' })
      return { object: 'model.retirement' as const, id: modelId, deleted: true }
    })
}
