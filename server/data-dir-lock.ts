import { linkSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

/** Held by the one process that may open the embedded database in a data directory. */
export interface DataDirLock {
  readonly path: string
  /** Removes the lock file; safe to call twice. */
  release(): void
}

/** The data directory is locked by another live process. */
export class DataDirLockedError extends Error {
  constructor(
    readonly lockPath: string,
    readonly holderPid: number,
  ) {
    super(
      `${lockPath} is held by another nilegate process (pid ${holderPid}): the embedded database allows one process at a time. ` +
        'Stop that process, point DATA_DIR elsewhere, or set DATABASE_URL to run several gateways on Postgres. ' +
        `If no such process runs, delete ${lockPath}.`,
    )
    this.name = 'DataDirLockedError'
  }
}

const lockFileName = 'nilegate.lock'
// Guards the takeover of a stale lock, so that two processes cannot both replace it.
const takeoverFileName = 'nilegate.lock.takeover'

export function dataDirLockPath(dataDir: string): string {
  return join(resolve(dataDir), lockFileName)
}

/**
 * Takes the exclusive lock of `dataDir` (creating the directory), or throws DataDirLockedError
 * when a live process holds it. A lock left by a dead process is taken over.
 */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const directory = resolve(dataDir)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const lockPath = join(directory, lockFileName)
  for (;;) {
    if (createPidFile(lockPath)) return heldLock(lockPath)
    const holder = readPid(lockPath)
    if (holder === 'missing') continue // released meanwhile
    if (isLiveHolder(holder)) throw new DataDirLockedError(lockPath, holder)
    takeOverStaleLock(directory, lockPath, holder)
  }
}

/** The pid in the lock file of `dataDir` if that process is alive (and not this one), else null. */
export function liveDataDirLockHolder(dataDir: string): number | null {
  const holder = readPid(dataDirLockPath(dataDir))
  return isLiveHolder(holder) ? holder : null
}

// Our own pid in a lock we do not hold is stale: in a container the gateway is pid 1 on every start.
function isLiveHolder(holder: number | 'missing' | 'invalid'): holder is number {
  return typeof holder === 'number' && holder !== process.pid && isAlive(holder)
}

// The pid is written to a private file first and then hard-linked into place: link() fails if the
// lock exists, and a lock file never exists without its pid.
function createPidFile(path: string): boolean {
  const draft = `${path}.${process.pid}.${crypto.randomUUID()}`
  writeFileSync(draft, `${process.pid}\n`, { mode: 0o600 })
  try {
    linkSync(draft, path)
    return true
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false
    throw error
  } finally {
    rmSync(draft, { force: true })
  }
}

function takeOverStaleLock(directory: string, lockPath: string, staleHolder: number | 'invalid'): void {
  const takeoverPath = join(directory, takeoverFileName)
  if (!createPidFile(takeoverPath)) {
    // A process that died in the middle of a takeover leaves the guard behind.
    if (!isLiveHolder(readPid(takeoverPath))) rmSync(takeoverPath, { force: true })
    return
  }
  try {
    if (readPid(lockPath) === staleHolder) rmSync(lockPath, { force: true })
  } finally {
    rmSync(takeoverPath, { force: true })
  }
}

function heldLock(path: string): DataDirLock {
  let held = true
  const release = () => {
    if (!held) return
    held = false
    process.off('exit', release)
    // Only our own lock: never remove one another process took over meanwhile.
    if (readPid(path) === process.pid) unlinkIfPresent(path)
  }
  process.on('exit', release)
  return { path, release }
}

function readPid(path: string): number | 'missing' | 'invalid' {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim())
    return Number.isSafeInteger(pid) && pid > 0 ? pid : 'invalid'
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return 'missing'
    throw error
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return errorCode(error) === 'EPERM'
  }
}

function unlinkIfPresent(path: string): void {
  try {
    unlinkSync(path)
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}
