import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { egp, oneOfStrings, orNull, unixSeconds } from './fields'

const JsonObject = t.Record(t.String(), t.Unknown())

/** A record of the audit trail; `type` is the action, like `api_key.created` or `login.failed`. */
export const AuditLog = t.Object({
  object: t.Literal('organization.audit_log'),
  id: t.String(),
  type: t.String(),
  effective_at: unixSeconds(),
  actor: t.Object({ type: t.Union([t.Literal('user'), t.Literal('api_key'), t.Literal('operator'), t.Literal('system')]), id: t.String(), email: orNull(t.String()) }),
  target: t.Object({ type: t.String(), id: t.String() }),
  project_id: orNull(t.String()),
  changes: orNull(t.Object({ before: orNull(JsonObject), after: orNull(JsonObject) }, { description: 'The changed fields before and after; never a secret.' })),
  ip_address: orNull(t.String()),
  request_id: orNull(t.String()),
})

export const AuditLogList = t.Object({
  object: t.Literal('list'),
  data: t.Array(AuditLog),
  first_id: orNull(t.String()),
  last_id: orNull(t.String()),
  has_more: t.Boolean({ description: 'Whether records lie beyond this page in the direction of the cursor.' }),
})

/** Totals of one group of a bucket; the fields not grouped by are null. */
export const UsageResult = t.Object({
  object: oneOfStrings(['organization.usage.result', 'organization.usage.completions.result', 'organization.usage.embeddings.result']),
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  num_model_requests: Type.Integer(),
  cost_egp: egp('Cost of these requests.'),
  project_id: orNull(t.String()),
  api_key_id: orNull(t.String()),
  model: orNull(t.String()),
})

/** Usage in buckets of a day or an hour of the billing time zone. */
export const UsagePage = t.Object({
  object: t.Literal('page'),
  data: t.Array(t.Object({ object: t.Literal('bucket'), start_time: unixSeconds(), end_time: unixSeconds(), results: t.Array(UsageResult) })),
  has_more: t.Boolean(),
  next_page: orNull(t.String({ description: 'Pass as `page` for the next buckets.' })),
  raw_usage_from: orNull(
    unixSeconds(
      'From when the individual usage rows behind these totals are kept; null when none were ever removed. Totals before it come from the sums kept with the rows, and are just as exact, but a range that starts or ends inside a quarter-hour before it counts that whole quarter-hour.',
    ),
  ),
})

/** Month-to-date spend of a project or key against its cap. */
export const SpendLine = t.Object({
  id: t.String(),
  name: t.String(),
  project_id: t.Optional(orNull(t.String({ description: "The key's project (on API key lines)." }))),
  month_to_date_spend_egp: egp('Spend this month.'),
  monthly_spend_cap_egp: orNull(egp('The monthly cap.')),
})

/** The balance with month-to-date spend per project and key. */
export const Balance = t.Object({
  object: t.Literal('organization.balance'),
  organization_id: t.String(),
  balance_egp: egp("The ledger's balance: credits minus recorded usage."),
  available_egp: egp('The balance less what running requests hold and what was settled but not yet recorded.'),
  month: t.String({ description: 'YYYY-MM, in the billing time zone.' }),
  billing_time_zone: t.String(),
  month_to_date_spend_egp: egp('Spend this month.'),
  projects: t.Array(SpendLine),
  api_keys: t.Array(SpendLine),
})
