import type { BillingAccount } from '../../core/reconcile'
import type { Drizzle } from './drizzle'
import { organizations } from './schema'

/** Every organization with the time zone its billing months are counted in. */
export async function listBillingAccounts(db: Drizzle): Promise<BillingAccount[]> {
  return db.select({ orgId: organizations.id, timeZone: organizations.billingTimeZone }).from(organizations).orderBy(organizations.id)
}
