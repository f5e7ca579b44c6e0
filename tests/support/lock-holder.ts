/**
 * Run as a child process by tests: takes the data-dir lock of argv[2], prints `locked <pid>` (or
 * `refused <holder pid>` and exits 3), then holds the lock until its stdin closes.
 */
import { acquireDataDirLock, DataDirLockedError } from '../../server/data-dir-lock'

const dataDir = Bun.argv[2]
if (!dataDir) throw new Error('usage: bun tests/support/lock-holder.ts <data dir>')
try {
  const lock = acquireDataDirLock(dataDir)
  console.log(`locked ${process.pid}`)
  await new Response(Bun.stdin.stream()).text() // resolves when the parent closes stdin
  lock.release()
} catch (error) {
  if (!(error instanceof DataDirLockedError)) throw error
  console.log(`refused ${error.holderPid}`)
  process.exit(3)
}
