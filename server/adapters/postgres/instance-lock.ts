import postgres from 'postgres'

/**
 * How an instance shares its Postgres database with other gateways. `sole`: it keeps rate windows
 * and balances in process (no REDIS_URL), which is exact only while no other instance admits
 * requests for the same organizations. `shared`: its admission counters live in Redis, which any
 * number of instances may share.
 */
export type InstanceLockMode = 'sole' | 'shared'

/** Another instance holds the lock in a mode this one cannot join. */
export class InstanceLockRefused extends Error {
  override name = 'InstanceLockRefused'
}

export interface InstanceLockOptions {
  /** How often the holder checks that its connection still holds the lock (and so keeps it from idling out). */
  checkIntervalMs?: number
  /**
   * Called once when the lock was lost and another instance took it in a mode this one cannot
   * join: this instance must stop admitting requests. Not called while the database does not
   * answer, nor when the lock is taken back.
   */
  onLost(error: InstanceLockRefused): void
  log?: Pick<Console, 'error'>
}

export interface InstanceLock {
  readonly mode: InstanceLockMode
  /** Ends the lock's connection, which releases the lock. */
  release(): Promise<void>
}

// The two int4 keys of pg_try_advisory_lock(int, int); pg_locks shows them as classid and objid,
// with objsubid 2. The first is nilegate's (its migration lock uses a bigint key: no clash).
const lockKeys = [720_254_401, 26] as const

/**
 * Takes the instance lock on the Postgres database of `databaseUrl`: a session-level advisory lock,
 * exclusive for a `sole` instance and shared for `shared` ones, held on a connection of its own for
 * the life of the process. Postgres drops it when that connection ends, the holder's death
 * (kill -9, a lost machine) included, so a stale lock never needs clearing by hand. Two instances
 * without REDIS_URL would each admit requests against its own copy of every rate window and
 * balance (the limit times the instances); a sole instance beside instances on Redis, likewise.
 *
 * Throws InstanceLockRefused, naming REDIS_URL, when another instance holds it in a mode this one
 * cannot join. While running, the connection is checked every `checkIntervalMs` (the queries also
 * keep idle timeouts of the server and of middleboxes from ending it). When it was lost (Postgres
 * restarted, a network cut), the lock is taken again on a new connection as soon as the database
 * answers; if another instance took it meanwhile, `onLost` is called.
 */
export async function acquireInstanceLock(databaseUrl: string, mode: InstanceLockMode, options: InstanceLockOptions): Promise<InstanceLock> {
  const log = options.log ?? console
  // One connection, never ended for idleness or age: the lock lives exactly as long as it.
  const sql = postgres(databaseUrl, { max: 1, idle_timeout: 0, max_lifetime: 0, onnotice: () => {}, connection: { application_name: 'nilegate instance lock' } })
  const take = async () => {
    const [row] = mode === 'sole' ? await sql<{ taken: boolean }[]>`select pg_try_advisory_lock(${lockKeys[0]}::int, ${lockKeys[1]}::int) as taken` : await sql<{ taken: boolean }[]>`select pg_try_advisory_lock_shared(${lockKeys[0]}::int, ${lockKeys[1]}::int) as taken`
    if (!row?.taken) throw new InstanceLockRefused(refusal(mode))
  }
  try {
    await take()
  } catch (error) {
    await sql.end({ timeout: 5 })
    throw error
  }

  let stopped = false
  let lostConnection = false
  let timer: ReturnType<typeof setTimeout> | null = null
  const check = async () => {
    try {
      const [row] = await sql<{ held: boolean }[]>`select exists(select 1 from pg_locks where locktype = 'advisory' and pid = pg_backend_pid() and classid = ${lockKeys[0]} and objid = ${lockKeys[1]} and objsubid = 2 and granted) as held`
      if (!row?.held) {
        await take()
        log.error('nilegate took its instance lock on Postgres again, after losing its connection.')
      }
      lostConnection = false
    } catch (error) {
      if (error instanceof InstanceLockRefused) {
        stopped = true
        options.onLost(error)
        return
      }
      if (!lostConnection) log.error(`nilegate lost the connection holding its instance lock on Postgres (${error instanceof Error ? error.message : String(error)}); taking it again once the database answers.`)
      lostConnection = true
    }
    if (!stopped) timer = setTimeout(check, options.checkIntervalMs ?? 5_000)
  }
  timer = setTimeout(check, options.checkIntervalMs ?? 5_000)

  return {
    mode,
    async release() {
      stopped = true
      if (timer) clearTimeout(timer)
      await sql.end({ timeout: 5 })
    },
  }
}

function refusal(mode: InstanceLockMode): string {
  return mode === 'sole'
    ? 'another nilegate instance runs on this database, and an instance without REDIS_URL keeps rate limits and balances in its own memory: set REDIS_URL, the same Redis on every instance, to run several'
    : 'a nilegate instance without REDIS_URL runs on this database and keeps rate limits and balances in its own memory: stop it, or restart it with this REDIS_URL, before starting instances with REDIS_URL'
}
