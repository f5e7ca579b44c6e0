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

export const ModelRetirementDeleted = deletedObject('model.retirement')
