import type { ChangeBus, GovernanceChange } from './changes'

export interface FollowStoredOptions<T> {
  /** The change that announces a new stored state. */
  kind: GovernanceChange['kind']
  /** Names the state in the log, should a read fail. */
  what: string
  read: () => Promise<T>
  apply: (state: T) => void
  changes: ChangeBus
  refreshMs?: number
}

/**
 * Keeps what this instance holds in step with what is stored: reads and applies it now, again
 * whenever any instance announces a change of `kind`, and every `refreshMs` (a minute) in case an
 * announcement was lost (the bus was down). Reads that finish out of order never apply an older
 * state over a newer one. Resolves, once the first read is applied, with how to stop.
 */
export async function followStored<T>({ kind, what, read, apply, changes, refreshMs = 60_000 }: FollowStoredOptions<T>): Promise<() => void> {
  let latestRead = 0
  const refresh = async () => {
    const readNumber = ++latestRead
    const state = await read()
    if (readNumber === latestRead) apply(state)
  }
  const refreshLogged = () => refresh().catch((error: unknown) => console.error(`re-reading ${what} failed`, error))
  await refresh()
  const unsubscribe = changes.subscribe((change) => {
    if (change.kind === kind) void refreshLogged()
  })
  // The timer alone never keeps the process alive.
  const timer = setInterval(refreshLogged, refreshMs)
  timer.unref()
  return () => {
    unsubscribe()
    clearInterval(timer)
  }
}
