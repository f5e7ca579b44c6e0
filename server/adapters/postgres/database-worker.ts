/**
 * The thread that owns the embedded database; worker-database.ts starts it and talks to it. PGlite
 * executes queries synchronously on the thread that calls it, so here a batch of usage inserts
 * stalls this thread instead of every response of the gateway.
 */
import { governanceAreas, type GovernanceArea } from '../../core/governance'
import { serializeError, type SerializedError } from './cross-thread-error'
import { openEmbeddedDatabase, type DemoTenantOptions, type EmbeddedDatabase } from './database'
import type { RetentionOptions } from './ledger-retention'
import type { UsageBatch } from './usage-repository'

// Bun runs this file as a Web Worker; `self` is the worker's global scope.
declare var self: Worker

/** One call: `args` are structured-cloned, so bigint, Date and Map keep their types. */
export interface DatabaseWorkerRequest {
  id: number
  operation: DatabaseWorkerOperation
  args: unknown[]
}

/** The answer to the request with the same id. */
export type DatabaseWorkerReply = { id: number; value: unknown } | { id: number; error: SerializedError }

let database: EmbeddedDatabase | null = null
let closing: Promise<void> | null = null
// Calls that have started and not answered; `close` lets them finish before PGlite goes away.
const inFlight = new Set<Promise<unknown>>()

function opened(): EmbeddedDatabase {
  if (database) return database
  throw new Error(closing ? 'the embedded database is closed' : 'the embedded database is not open yet')
}

const operations = {
  async open(dataDir: string): Promise<void> {
    if (database || closing) throw new Error('the embedded database was already opened in this worker')
    // The caller holds the data-dir lock; this thread only opens what it was told to.
    database = await openEmbeddedDatabase(dataDir)
  },
  findApiKeysByHashes: (hashesHex: string[]) => opened().identities.findApiKeysByHashes(hashesHex),
  /** A batch as `usageBatch` text (see usage-repository.ts). */
  writeUsageBatch: (batch: UsageBatch) => opened().writeUsageBatch(batch),
  readCounters: (orgId: string, month: string, timeZone: string, requestIds: string[]) => opened().ledger.readCounters(orgId, month, timeZone, requestIds),
  readUsageAfter: (orgId: string, snapshot: string, sinceMs: number, untilMs: number, timeZone: string) => opened().ledger.readUsageAfter(orgId, snapshot, sinceMs, untilMs, timeZone),
  findUsageRows: (orgId: string, snapshot: string, requestIds: string[], timeZone: string) => opened().ledger.findUsageRows(orgId, snapshot, requestIds, timeZone),
  createDemoTenant: (options?: DemoTenantOptions) => opened().createDemoTenant(options),
  seedDemoIfEmpty: (options?: DemoTenantOptions) => opened().seedDemoIfEmpty(options),
  hasOrganizations: () => opened().hasOrganizations(),
  listBillingAccounts: () => opened().listBillingAccounts(),
  ledgerStatus: () => opened().ledgerStatus(),
  retainUsage: (options: RetentionOptions) => opened().retainUsage(options),
  /** A call of the management API's repositories: area, method, then the method's arguments. */
  governance(area: GovernanceArea, method: string, ...args: unknown[]): Promise<unknown> {
    const repository = governanceAreas.includes(area) ? (opened().governance[area] as unknown as Record<string, unknown>) : undefined
    const run = repository && Object.hasOwn(repository, method) ? repository[method] : undefined
    if (typeof run !== 'function') throw new Error(`unknown governance operation ${JSON.stringify(`${area}.${method}`)}`)
    return run.apply(repository, args)
  },
  close(): Promise<void> {
    closing ??= (async () => {
      await Promise.allSettled(inFlight)
      const closed = database
      database = null
      await closed?.close()
    })()
    return closing
  },
}

/** What the worker does, by name; the caller's side derives its typed calls from this. */
export type DatabaseWorkerOperations = typeof operations
export type DatabaseWorkerOperation = keyof DatabaseWorkerOperations

function reply(message: DatabaseWorkerReply): void {
  try {
    self.postMessage(message)
  } catch (error) {
    // A value that cannot be cloned must still answer its caller.
    self.postMessage({ id: message.id, error: serializeError(error) } satisfies DatabaseWorkerReply)
  }
}

self.onmessage = async (event: MessageEvent<DatabaseWorkerRequest>) => {
  const { id, operation, args } = event.data
  // Async, so that an operation throwing before its first await still answers instead of killing the thread.
  const run = (async () => {
    if (!Object.hasOwn(operations, operation)) throw new Error(`unknown database operation ${JSON.stringify(operation)}`)
    return (operations[operation] as (...args: unknown[]) => Promise<unknown>)(...args)
  })()
  if (operation !== 'close') inFlight.add(run)
  try {
    reply({ id, value: await run })
  } catch (error) {
    reply({ id, error: serializeError(error) })
  } finally {
    inFlight.delete(run)
  }
}
