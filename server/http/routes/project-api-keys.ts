import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import { GatewayError } from '@nilegate/shared/errors'
import { literalUnion, nullable } from '@nilegate/shared/schemas/common'
import { generateApiKey } from '../../core/api-keys'
import { keyScopes } from '../../core/authenticate'
import { parseCidr } from '../../core/client-ip'
import { apiKeyStatus, type ApiKeyChanges, type ApiKeyRecord } from '../../core/governance/projects'
import { formatEgpOrNull, parseEgp } from '../../core/money'
import { idempotent } from '../idempotency'
import { authorize, orgAccess, type ManagementDeps } from '../management'
import { listObject, ListQuery, optional, pageQuery, RpmField, SpendCapField, trimmedName } from '../management-fields'
import type { RouteTable } from '../plugins/error-handler'

export const apiKeyRouteTable: RouteTable = [
  { pattern: /^\/v1\/organization\/projects\/[^/]+\/api_keys\/?$/, methods: ['GET', 'POST'] },
  { pattern: /^\/v1\/organization\/projects\/[^/]+\/api_keys\/[^/]+\/?$/, methods: ['GET', 'POST', 'DELETE'] },
]

const secondsPerDay = 86_400
const maxExpiryDays = 3_650

/** A key as the API shows it (OpenAI's `organization.project.api_key` plus its limits); never the secret. */
export function apiKeyObject(key: ApiKeyRecord, nowMs: number) {
  return {
    object: 'organization.project.api_key' as const,
    id: key.id,
    name: key.name,
    redacted_value: key.displayPrefix,
    created_at: key.createdAt,
    last_used_at: key.lastUsedAt,
    expires_at: key.expiresAt,
    revoked_at: key.revokedAt,
    status: apiKeyStatus(key, nowMs),
    rpm_limit: key.rpmLimit,
    monthly_spend_cap_egp: formatEgpOrNull(key.monthlySpendCapMicros),
    ip_allow_list: key.ipAllowList,
    scopes: key.scopes,
    owner: { type: 'user' as const, user: key.owner },
  }
}

const scopeError = `must be a non-empty array of ${keyScopes.map((scope) => `'${scope}'`).join(', ')}`
const keyFields = {
  expires_at: nullable(Type.Integer({ minimum: 1, error: 'must be a Unix timestamp in seconds, or null for no expiry' })),
  expires_in_days: t.Optional(Type.Integer({ minimum: 1, maximum: maxExpiryDays, error: `must be an integer from 1 to ${maxExpiryDays}` })),
  rpm_limit: RpmField,
  monthly_spend_cap_egp: SpendCapField,
  ip_allow_list: t.Optional(t.Array(t.String({ error: 'must be an IP address or CIDR' }), { maxItems: 100, error: 'must be an array of at most 100 IP addresses or CIDRs' })),
  scopes: t.Optional(t.Array(literalUnion(keyScopes, { error: scopeError }), { minItems: 1, error: scopeError })),
}
const CreateApiKey = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }), ...keyFields }, { additionalProperties: false })
const ModifyApiKey = t.Object({ name: t.Optional(t.String({ minLength: 1, maxLength: 200 })), ...keyFields }, { additionalProperties: false })
const ProjectParams = t.Object({ project_id: t.String() })
const KeyParams = t.Object({ project_id: t.String(), key_id: t.String() })

/** 400 naming the first entry that is not an address or CIDR; duplicates are dropped. */
function checkedAllowList(entries: string[]): string[] {
  const trimmed = entries.map((entry) => entry.trim())
  const invalid = trimmed.find((entry) => parseCidr(entry) === null)
  if (invalid !== undefined) throw new GatewayError('invalid_request', `Invalid ip_allow_list: ${JSON.stringify(invalid)} is not an IPv4 or IPv6 address or CIDR.`, 'ip_allow_list')
  return [...new Set(trimmed)]
}

/** The expiry a body sets: `expires_at` (in the future, or null for none) or `expires_in_days`, not both. */
function expiry(body: typeof ModifyApiKey.static, nowMs: number): Date | null | undefined {
  if (body.expires_at != null && body.expires_in_days !== undefined) {
    throw new GatewayError('invalid_request', 'Give either expires_at or expires_in_days, not both.', 'expires_in_days')
  }
  if (body.expires_in_days !== undefined) return new Date(nowMs + body.expires_in_days * secondsPerDay * 1000)
  return optional(body.expires_at, (seconds) => {
    if (seconds * 1000 <= nowMs) throw new GatewayError('invalid_request', 'Invalid expires_at: must be in the future.', 'expires_at')
    return new Date(seconds * 1000)
  })
}

/** The key fields a body sets; absent fields are left out. */
function keyChanges(body: typeof ModifyApiKey.static, nowMs: number): ApiKeyChanges {
  return {
    name: optional(body.name, trimmedName) ?? undefined,
    expiresAt: expiry(body, nowMs),
    rpmLimit: body.rpm_limit,
    monthlySpendCapMicros: optional(body.monthly_spend_cap_egp, parseEgp),
    ipAllowList: optional(body.ip_allow_list, checkedAllowList) ?? undefined,
    scopes: optional(body.scopes, (scopes) => [...new Set(scopes)]) ?? undefined,
  }
}

/**
 * API keys of a project under /v1/organization/projects/{project_id}/api_keys. A new key's secret
 * is in the creation answer only; every change that alters what a key may do reaches every
 * gateway instance's key cache through the change bus.
 */
export function apiKeyRoutes(deps: ManagementDeps) {
  const store = deps.governance.projects
  const now = () => (deps.now ?? Date.now)()
  const changed = (orgId: string) => deps.changes.publish({ kind: 'organization', orgId })
  return new Elysia({ normalize: false })
    .use(orgAccess(deps))
    .get(
      '/v1/organization/projects/:project_id/api_keys',
      async ({ org, params, query }) => {
        authorize(org, 'api_keys.read')
        const page = await store.listApiKeys(org.orgId, params.project_id, pageQuery(query))
        const nowMs = now()
        return listObject(page, page.items.map((key) => apiKeyObject(key, nowMs)))
      },
      { params: ProjectParams, query: ListQuery },
    )
    // A client's retry (the SDKs send one Idempotency-Key across a POST's attempts) must not make a
    // second live secret. The replay is the key as first created, with `value: null` and
    // `Idempotent-Replayed: true`, rather than a 409: the client learns the key's id, to use or
    // revoke it, and the secret is shown once and stored nowhere, the idempotency store included.
    .post(
      '/v1/organization/projects/:project_id/api_keys',
      ({ org, principal, params, body, request, set }) =>
        idempotent(
          deps.governance.idempotency,
          { request, body, set, scope: principal.user.id },
          async () => {
            authorize(org, 'api_keys.manage')
            const nowMs = now()
            const changes = keyChanges(body, nowMs)
            const secret = generateApiKey()
            const key = await store.createApiKey(
              org.orgId,
              params.project_id,
              {
                name: changes.name!,
                secretHash: secret.hashHex,
                displayPrefix: secret.displayPrefix,
                createdByUserId: principal.user.id,
                expiresAt: changes.expiresAt ?? null,
                rpmLimit: changes.rpmLimit ?? null,
                monthlySpendCapMicros: changes.monthlySpendCapMicros ?? null,
                ipAllowList: changes.ipAllowList ?? [],
                scopes: changes.scopes ?? [...keyScopes],
              },
              principal.actor,
            )
            set.status = 201
            return { ...apiKeyObject(key, nowMs), value: secret.secret as string | null }
          },
          { storedAs: (created) => ({ ...created, value: null }) },
        ),
      { params: ProjectParams, body: CreateApiKey },
    )
    .get(
      '/v1/organization/projects/:project_id/api_keys/:key_id',
      async ({ org, params }) => {
        authorize(org, 'api_keys.read')
        const key = await store.findApiKey(org.orgId, params.project_id, params.key_id)
        if (!key) throw new GatewayError('not_found', `No API key '${params.key_id}' in this project.`, 'api_key_id')
        return apiKeyObject(key, now())
      },
      { params: KeyParams },
    )
    .post(
      '/v1/organization/projects/:project_id/api_keys/:key_id',
      ({ org, principal, params, body, request, set }) =>
        idempotent(deps.governance.idempotency, { request, body, set, scope: principal.user.id }, async () => {
          authorize(org, 'api_keys.manage')
          const nowMs = now()
          const key = await store.updateApiKey(org.orgId, params.project_id, params.key_id, keyChanges(body, nowMs), principal.actor)
          await changed(org.orgId)
          return apiKeyObject(key, nowMs)
        }),
      { params: KeyParams, body: ModifyApiKey },
    )
    .delete(
      '/v1/organization/projects/:project_id/api_keys/:key_id',
      async ({ org, principal, params }) => {
        authorize(org, 'api_keys.manage')
        const key = await store.revokeApiKey(org.orgId, params.project_id, params.key_id, principal.actor)
        await changed(org.orgId)
        return { object: 'organization.project.api_key.deleted' as const, id: key.id, deleted: true }
      },
      { params: KeyParams },
    )
}
