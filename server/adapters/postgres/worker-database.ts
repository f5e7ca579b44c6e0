import { governanceAreas, type Governance, type GovernanceArea } from '../../core/governance'
import { reviveError } from './cross-thread-error'
import { createUsageRepository, usageBatch } from './usage-repository'
import { hasEmbeddedDatabase, type GatewayDatabase } from './database'
import type { DatabaseWorkerOperation, DatabaseWorkerOperations, DatabaseWorkerReply, DatabaseWorkerRequest } from './database-worker'
import { batchKeyLookups } from './key-lookups'

/** The entry of the database thread, for callers that start the Worker themselves. */
export const databaseWorkerUrl = new URL('./database-worker.ts', import.meta.url)

export interface WorkerDatabaseOptions {
  /** PGlite lives in `<dataDir>/pglite`; hold the data-dir lock (data-dir-lock.ts) first. */
  dataDir: string
  /** A Worker started on `databaseWorkerUrl`, which then creates a fresh database too; when absent, one is started, after a thread of its own created a fresh database. */
  worker?: Worker
  /** Where an unexpected end of the worker is reported. */
  log?: (message: string) => void
}

/** The embedded database running in a worker thread. */
export interface WorkerDatabase extends GatewayDatabase {
  readonly kind: 'pglite'
}

/** Every call fails with this once the database thread has ended without being closed. */
export class DatabaseWorkerExitedError extends Error {
  override name = 'DatabaseWorkerExitedError'
}

type Operations = DatabaseWorkerOperations

/**
 * Opens the embedded PGlite under `dataDir` (migrations included) in a worker thread, so its
 * synchronous query execution never stalls the event loop that serves requests. A database not
 * created yet is created first, in a thread of its own (createInThreadOfItsOwn). Closing closes
 * PGlite and then ends the thread.
 */
export async function openDatabaseInWorker(options: WorkerDatabaseOptions): Promise<WorkerDatabase> {
  const log = options.log ?? ((message: string) => console.error(message))
  if (!options.worker && !hasEmbeddedDatabase(options.dataDir)) await createInThreadOfItsOwn(options.dataDir, log)
  const client = await openedIn(new DatabaseWorkerClient(options.worker ?? new Worker(databaseWorkerUrl), log), options.dataDir)
  return {
    kind: 'pglite',
    identities: { findApiKeyByHash: batchKeyLookups((hashesHex) => client.call('findApiKeysByHashes', hashesHex)) },
    usage: createUsageRepository(async (events, lastUsed) => client.call('writeUsageBatch', await usageBatch(events, lastUsed))),
    ledger: {
      readCounters: (orgId, month, timeZone, requestIds = []) => client.call('readCounters', orgId, month, timeZone, [...requestIds]),
      readUsageAfter: (orgId, snapshot, sinceMs, untilMs, timeZone) => client.call('readUsageAfter', orgId, snapshot, sinceMs, untilMs, timeZone),
      findUsageRows: (orgId, snapshot, requestIds, timeZone) => client.call('findUsageRows', orgId, snapshot, [...requestIds], timeZone),
    },
    createDemoTenant: (demoOptions) => client.call('createDemoTenant', demoOptions),
    seedDemoIfEmpty: (demoOptions) => client.call('seedDemoIfEmpty', demoOptions),
    hasOrganizations: () => client.call('hasOrganizations'),
    listBillingAccounts: () => client.call('listBillingAccounts'),
    ledgerStatus: () => client.call('ledgerStatus'),
    retainUsage: (retention) => client.call('retainUsage', retention),
    governance: governanceInWorker(client),
    close: () => client.close(),
  }
}

/** `client` once its thread has opened the database; a failed open ends the thread. */
async function openedIn(client: DatabaseWorkerClient, dataDir: string): Promise<DatabaseWorkerClient> {
  try {
    await client.call('open', dataDir)
    return client
  } catch (error) {
    await client.terminate()
    throw error
  }
}

/**
 * Creates and migrates the database in a thread that ends afterwards. Creating it (initdb) takes
 * PGlite's thread to some 900 MiB and leaves it holding much of that; the thread that serves then
 * opens the files as on any later start: a gateway's first start idled at 220 MiB resident, and
 * now at 185, as a restart on the same files does.
 */
async function createInThreadOfItsOwn(dataDir: string, log: (message: string) => void): Promise<void> {
  const creator = await openedIn(new DatabaseWorkerClient(new Worker(databaseWorkerUrl), log), dataDir)
  await creator.close()
}

/** Each repository method of the management API becomes a call into the thread. */
function governanceInWorker(client: DatabaseWorkerClient): Governance {
  const area = (name: GovernanceArea) =>
    new Proxy({} as Record<string, unknown>, {
      get: (_, method) => (typeof method === 'string' && method !== 'then' ? (...args: unknown[]) => client.call('governance', name, method, ...args) : undefined),
    })
  return Object.fromEntries(governanceAreas.map((name) => [name, area(name)])) as unknown as Governance
}

interface PendingCall {
  operation: DatabaseWorkerOperation
  resolve(value: unknown): void
  reject(error: Error): void
}

/** Request ids, replies, and the end of the thread: expected (close) or not (a crash). */
class DatabaseWorkerClient {
  private readonly pending = new Map<number, PendingCall>()
  private readonly exited: Promise<void>
  private nextId = 1
  /** Set once calls can no longer succeed; later calls reject with it. */
  private stopped: Error | null = null
  private closing: Promise<void> | null = null

  constructor(
    private readonly worker: Worker,
    private readonly log: (message: string) => void,
  ) {
    worker.addEventListener('message', (event: MessageEvent<DatabaseWorkerReply>) => this.settle(event.data))
    // An uncaught error ends a Bun worker; the 'close' event that follows rejects the calls.
    worker.addEventListener('error', (event: ErrorEvent) => this.log(`embedded database thread: ${event.message}`))
    this.exited = new Promise((resolve) => {
      worker.addEventListener('close', (event) => {
        this.exit((event as CloseEvent).code)
        resolve()
      })
    })
  }

  call<Name extends DatabaseWorkerOperation>(operation: Name, ...args: Parameters<Operations[Name]>): Promise<Awaited<ReturnType<Operations[Name]>>> {
    if (this.stopped) return Promise.reject(this.stopped)
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { operation, resolve: resolve as (value: unknown) => void, reject })
      try {
        this.worker.postMessage({ id, operation, args } satisfies DatabaseWorkerRequest)
      } catch (error) {
        this.pending.delete(id)
        reject(error as Error)
      }
    })
  }

  /** Closes PGlite in the thread (after the calls in flight), then ends the thread. Safe to repeat. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.stopped) return
      try {
        await this.call('close')
      } finally {
        this.stopped = new Error('the embedded database is closed')
        await this.terminate()
      }
    })()
    return this.closing
  }

  /** Ends the thread at once and waits until it has. */
  async terminate(): Promise<void> {
    this.stopped ??= new Error('the embedded database is closed')
    this.worker.terminate()
    await this.exited
  }

  private settle(reply: DatabaseWorkerReply): void {
    const call = this.pending.get(reply.id)
    if (!call) return
    this.pending.delete(reply.id)
    if ('error' in reply) call.reject(reviveError(reply.error))
    else call.resolve(reply.value)
  }

  private exit(code: number): void {
    if (!this.stopped) {
      this.stopped = new DatabaseWorkerExitedError(`the embedded database thread exited unexpectedly (code ${code}); restart the gateway`)
      this.log(this.stopped.message)
    }
    for (const [id, call] of this.pending) {
      this.pending.delete(id)
      call.reject(this.stopped instanceof DatabaseWorkerExitedError ? this.stopped : new DatabaseWorkerExitedError(`the embedded database thread ended before answering ${call.operation}`))
    }
  }
}
