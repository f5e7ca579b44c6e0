import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { User } from './accounts'
import { deletedObject, egp, listOf, oneOfStrings, orNull, unixSeconds } from './fields'

/** A user as operators see it. */
export const AdminUser = t.Object({ ...User.properties, is_operator: t.Boolean(), status: oneOfStrings(['active', 'disabled', 'deleted']) })

export const AdminUserList = listOf(AdminUser)

/** A credit top-up and the balance after it. */
export const Credit = t.Object({
  object: t.Literal('organization.credit'),
  id: t.String(),
  organization_id: t.String(),
  amount_egp: egp('The amount added.'),
  balance_egp: egp('The balance after the top-up.'),
  note: orNull(t.String()),
  created_at: unixSeconds(),
})

/** A row of an organization's credit ledger, as operators read its history. */
export const CreditTransaction = t.Object({
  object: t.Literal('organization.credit'),
  id: t.String(),
  organization_id: t.String(),
  kind: oneOfStrings(['top_up', 'demo_credit', 'adjustment', 'refund'], "`top_up` for an operator's top-up, `demo_credit` for a demo tenant's starting credit."),
  amount_egp: egp('The amount added; negative for one taken away.'),
  note: orNull(t.String()),
  actor: orNull(
    t.Object(
      { type: oneOfStrings(['user', 'api_key', 'operator', 'system']), id: t.String(), email: orNull(t.String()) },
      { description: 'Who added it, as the audit trail names them; null for a credit nobody added through the API.' },
    ),
  ),
  created_at: unixSeconds(),
})

export const CreditTransactionList = listOf(CreditTransaction)

export const ModelRetirementDeleted = deletedObject('model.retirement')

const tokens = (description: string) => Type.Integer({ minimum: 0, description })

/** A request whose upstream reported more than its hold: billed the hold at most, the rest never charged. */
export const UnbilledUsage = t.Object({
  object: t.Literal('admin.unbilled_usage'),
  id: t.String({ description: 'The request id (X-Request-Id).' }),
  organization_id: t.String(),
  project_id: t.String(),
  api_key_id: t.String(),
  model: t.String(),
  endpoint: oneOfStrings(['chat.completions', 'embeddings']),
  status: Type.Integer({ description: 'The HTTP status of the request; 499 when the client went away.' }),
  reported_prompt_tokens: tokens('Prompt tokens the upstream reported.'),
  reported_completion_tokens: tokens('Completion tokens the upstream reported.'),
  billed_prompt_tokens: tokens('Prompt tokens billed: at most the prompt bound of the hold.'),
  billed_completion_tokens: tokens('Completion tokens billed: at most the output bound of the hold.'),
  billed_egp: egp('What the request was billed: never more than its hold.'),
  unbilled_prompt_tokens: tokens('Prompt tokens reported beyond the hold, not billed.'),
  unbilled_completion_tokens: tokens('Completion tokens reported beyond the hold, not billed.'),
  unbilled_egp: egp('What the reported usage would have cost beyond what was billed; never charged.'),
  created_at: unixSeconds(),
})

export const UnbilledUsageList = listOf(UnbilledUsage)
