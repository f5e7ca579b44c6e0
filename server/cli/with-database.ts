import { openDatabase, type Database } from '../adapters/postgres/database'
import type { Config } from '../config'
import { controlSocketPath } from '../control-socket'
import { acquireDataDirLock, DataDirLockedError } from '../data-dir-lock'
import { CliError } from './cli-errors'

/** Two ways to do a CLI command's work: through a running gateway, or on the database itself. */
export interface DatabaseWork<T> {
  /** Asks the gateway on the data directory's control socket; null when none answers. */
  viaGateway(dataDir: string): Promise<T | null>
  direct(database: Database): Promise<T>
}

const pollMs = 100

/**
 * With DATABASE_URL, runs `work.direct` on Postgres. Embedded, the PGlite files may be opened by one
 * process only: a running gateway does the work through its control socket; otherwise the CLI takes
 * the data-dir lock and opens PGlite itself. A lock holder that does not answer within `waitMs`
 * (a gateway that is still starting gets that long) is reported, never bypassed.
 */
export async function withDatabase<T>(config: Config, work: DatabaseWork<T>, waitMs: number): Promise<T> {
  if (config.databaseUrl !== null) return runDirect(config, work)
  const deadline = performance.now() + waitMs
  for (;;) {
    const answered = await work.viaGateway(config.dataDir)
    if (answered !== null) return answered
    let lock
    try {
      lock = acquireDataDirLock(config.dataDir)
    } catch (error) {
      if (!(error instanceof DataDirLockedError)) throw error
      if (performance.now() >= deadline) throw unansweredLock(config.dataDir, error)
      await Bun.sleep(pollMs)
      continue
    }
    try {
      return await runDirect(config, work)
    } finally {
      lock.release()
    }
  }
}

async function runDirect<T>(config: Config, work: DatabaseWork<T>): Promise<T> {
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 })
  try {
    return await work.direct(database)
  } finally {
    await database.close()
  }
}

function unansweredLock(dataDir: string, error: DataDirLockedError): CliError {
  return new CliError(
    `The embedded database in ${dataDir} is in use by process ${error.holderPid} (a gateway?), and nothing answers on ${controlSocketPath(dataDir)}. ` +
      'Stop the gateway and run this again, or set DATABASE_URL to work on Postgres. ' +
      `If no nilegate process is running, delete ${error.lockPath}.`,
  )
}
