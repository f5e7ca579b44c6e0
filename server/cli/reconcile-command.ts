import { parseArgs } from 'node:util'
import { listBillingAccounts } from '../adapters/postgres/billing-accounts'
import { RedisAdmissionStore } from '../adapters/redis/admission-store'
import { waitForRedis } from '../adapters/redis/client'
import { connectRedis } from '../adapters/redis/connect-redis'
import { loadConfig } from '../config'
import type { LedgerCounters } from '../core/admission'
import { Catalog } from '../core/catalog'
import { LateUsageFollowUp, lookbackFor, type LedgerLoad } from '../core/late-usage'
import { demoCatalogPath, readCatalogFile } from '../catalog-file'
import { formatEgp } from '../core/money'
import type { LateUsageReader } from '../core/ports'
import { reconcileAccounts, type BillingAccount, type Reconciliation } from '../core/reconcile'
import { CliError, UsageError } from './cli-errors'
import { withDatabase } from './with-database'

export const reconcileUsage = `Usage: bun server/cli.ts reconcile [--json] [--dry-run]

Compares the admission counters in Redis (REDIS_URL) with the ledger in the database and repairs
them: counters Redis lost are rebuilt, a balance or month spend that drifted is brought back to the
ledger (open holds, and what settles meanwhile, are kept), expired holds are released. Gateways may
keep serving: requests settled while it looks are counted on both sides. A drift is repaired when
a second look 5 s later finds it the same. Prints one line per organization that was not in step.
After rebuilding counters it waits 5 s, then debits the usage rows gateways wrote since its read
for requests settled before Redis lost the counters.
  --json      print one JSON object per organization; its outcome is in_step, repaired, drifted
              (found, not repaired), unsettled (usage rows still on their way: run again),
              rebuilt or absent (no counters, on a dry run)
  --dry-run   report drift without repairing it (expired holds are still released)

An embedded gateway keeps its counters in process and rebuilds them from the ledger when it starts.`

function describe(result: Reconciliation): string {
  const parts = [`${result.orgId} ${result.month}: ${result.outcome}`]
  if (result.drift.balanceMicros !== 0n) parts.push(`balance off by ${formatEgp(result.drift.balanceMicros)} EGP`)
  for (const [keyId, drift] of result.drift.keys) parts.push(`key ${keyId} off by ${formatEgp(drift)} EGP`)
  for (const [projectId, drift] of result.drift.projects) parts.push(`project ${projectId} off by ${formatEgp(drift)} EGP`)
  if (result.releasedHolds > 0) parts.push(`${result.releasedHolds} expired holds released`)
  return parts.join('; ')
}

function toJson(result: Reconciliation): string {
  return JSON.stringify({
    organization_id: result.orgId,
    month: result.month,
    outcome: result.outcome,
    balance_drift_micros: result.drift.balanceMicros.toString(),
    key_drift_micros: Object.fromEntries([...result.drift.keys].map(([id, value]) => [id, value.toString()])),
    project_drift_micros: Object.fromEntries([...result.drift.projects].map(([id, value]) => [id, value.toString()])),
    released_holds: result.releasedHolds,
  })
}

function summary(results: Reconciliation[], dryRun: boolean): string {
  const said: Record<Reconciliation['outcome'], string> = {
    in_step: 'in step',
    repaired: 'repaired',
    drifted: dryRun ? 'drifted (would be repaired)' : 'drifted, not repaired: the second look differed or the counters changed meanwhile (run again)',
    unsettled: 'still settling (run again)',
    rebuilt: 'rebuilt',
    absent: 'without counters (would be rebuilt)',
  }
  const counts = new Map<Reconciliation['outcome'], number>()
  for (const { outcome } of results) counts.set(outcome, (counts.get(outcome) ?? 0) + 1)
  const parts = [...counts].map(([outcome, count]) => `${count} ${said[outcome]}`)
  return `${results.length} organizations checked${parts.length > 0 ? `: ${parts.join(', ')}` : ''}.`
}

/**
 * Counters rebuilt here were read from a ledger that may still lack rows gateways had queued when
 * Redis lost the counters: one look for them once those queues have gone out (a gateway's own
 * rebuilds look twice, over 30 s).
 */
async function followUpRebuilds(store: RedisAdmissionStore, ledger: LateUsageReader, loads: LedgerLoad[], longestRequestMs: () => Promise<number>): Promise<void> {
  if (loads.length === 0) return
  console.error(`${loads.length} organizations rebuilt; looking for usage rows still on their way to the ledger in ${lateRowsWaitMs / 1000} s`)
  const [longest] = await Promise.all([longestRequestMs(), Bun.sleep(lateRowsWaitMs)])
  const followUp = new LateUsageFollowUp(store, ledger, { afterMs: [], lookbackMs: lookbackFor(longest) })
  for (const load of loads) await followUp.pass(load)
}

const lateRowsWaitMs = 5_000

export async function runReconcileCommand(args: string[], env: Record<string, string | undefined>): Promise<void> {
  let values
  try {
    ;({ values } = parseArgs({ args, strict: true, allowPositionals: false, options: { json: { type: 'boolean' }, 'dry-run': { type: 'boolean' } } }))
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const config = loadConfig(env)
  if (!config.redisUrl) throw new CliError('reconcile works on the Redis admission counters: set REDIS_URL. ' + reconcileUsage.split('\n').at(-1))
  const redis = connectRedis(config.redisUrl)
  try {
    await waitForRedis(redis, 5_000)
    const store = new RedisAdmissionStore(redis)
    await store.loadScripts()
    const dryRun = values['dry-run'] === true
    const results = await withDatabase(
      config,
      {
        viaGateway: async () => null,
        async direct(database) {
          const loads: LedgerLoad[] = []
          const loaded = ({ orgId, timeZone }: BillingAccount, read: LedgerCounters, readAtMs: number, loadToken: string) => {
            if (read.snapshot !== undefined) loads.push({ orgId, month: read.month, timeZone, snapshot: read.snapshot, readAtMs, loadToken })
          }
          const found = await reconcileAccounts(store, database.ledger, await listBillingAccounts(database.drizzle), { repair: !dryRun, loaded })
          // The catalog the gateways serve (the file and the operators' stored deployments) says how
          // long their requests may have run.
          const longestRequestMs = async () => {
            const catalog = new Catalog((await readCatalogFile(config.catalogPath ?? demoCatalogPath)).models)
            catalog.applyDeployments(await database.governance.deployments.listDeployments())
            return catalog.longestRequestMs
          }
          await followUpRebuilds(store, database.ledger, loads, longestRequestMs)
          return found
        },
      },
      10_000,
    )
    for (const result of results) {
      if (values.json) console.log(toJson(result))
      else if (result.outcome !== 'in_step' || result.releasedHolds > 0) console.log(describe(result))
    }
    if (!values.json) console.log(summary(results, dryRun))
  } finally {
    await redis.close()
  }
}
