import { readdirSync } from 'node:fs'
import type { Subprocess } from 'bun'

/**
 * The child processes of one bench run. Each is ended by its own pid, on success, on failure and on
 * Ctrl-C, so a run never leaves a gateway or an upstream behind.
 */
export class ProcessGroup {
  private readonly children = new Set<Subprocess>()

  /** Starts `cmd` with its output written to `logPath` (stderr to `errorLogPath` when given). */
  spawn(cmd: string[], options: { env?: Record<string, string>; logPath: string; errorLogPath?: string; cwd?: string }): Subprocess {
    const log = Bun.file(options.logPath)
    const errorLog = options.errorLogPath ? Bun.file(options.errorLogPath) : log
    const child = Bun.spawn(cmd, { env: options.env, cwd: options.cwd, stdin: 'ignore', stdout: log, stderr: errorLog })
    this.children.add(child)
    child.exited.finally(() => this.children.delete(child))
    return child
  }

  /** SIGTERM to each child, SIGKILL to those still running after `graceMs`. */
  async stopAll(graceMs = 3_000): Promise<void> {
    const running = [...this.children]
    for (const child of running) child.kill('SIGTERM')
    const timeout = Bun.sleep(graceMs).then(() => 'timeout' as const)
    await Promise.all(
      running.map(async (child) => {
        if ((await Promise.race([child.exited, timeout])) === 'timeout') child.kill('SIGKILL')
      }),
    )
  }

  /** Last resort from a synchronous exit handler. */
  killAllNow(): void {
    for (const child of this.children) child.kill('SIGKILL')
  }
}

/** Waits until `logPath` contains a match of `pattern`; fails when `child` exits first or time runs out. */
export async function waitForLogLine(logPath: string, pattern: RegExp, child: Subprocess, timeoutMs: number): Promise<RegExpMatchArray> {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    const text = await Bun.file(logPath).text().catch(() => '')
    const match = text.match(pattern)
    if (match) return match
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${logPath}: the process exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${text.slice(-3000)}`)
    }
    await Bun.sleep(50)
  }
  throw new Error(`${logPath}: nothing matched ${pattern} within ${timeoutMs} ms`)
}

/**
 * CPU seconds (user + system) a process, or with `mainThread` only its first thread, has used so
 * far, from /proc; null where that is not readable.
 */
export async function cpuSeconds(pid: number, { mainThread = false } = {}): Promise<number | null> {
  try {
    const stat = await Bun.file(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`).text()
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 (clock ticks).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return null
  }
}

/** The processes on this machine whose command name is `name` (as /proc/PID/comm shows it). */
export async function processesNamed(name: string): Promise<number[]> {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const comm = await Bun.file(`/proc/${entry}/comm`)
      .text()
      .catch(() => '')
    if (comm.trim() === name) pids.push(Number(entry))
  }
  return pids
}

/** CPU seconds a group of processes has used so far; those that cannot be read count nothing. */
export async function totalCpuSeconds(pids: readonly number[]): Promise<number> {
  let total = 0
  for (const pid of pids) total += (await cpuSeconds(pid)) ?? 0
  return total
}

/**
 * Waits until `pids` together use under 4% of a core over half a second (their own work after a
 * load, such as writing usage, is done), or `maxMs` has passed.
 */
export async function waitUntilQuiet(pids: readonly number[], maxMs = 10_000): Promise<void> {
  const deadline = performance.now() + maxMs
  let before = await totalCpuSeconds(pids)
  while (performance.now() < deadline) {
    await Bun.sleep(500)
    const after = await totalCpuSeconds(pids)
    if (after - before < 0.02) return
    before = after
  }
}

/** Where a gateway's threads spend their CPU: the thread that serves requests, fetch's client, the embedded database, the collector, the rest. */
export type ThreadGroup = 'main' | 'fetch client' | 'database' | 'collector' | 'other'
export const threadGroups: ThreadGroup[] = ['main', 'fetch client', 'database', 'collector', 'other']

// Bun and JavaScriptCore name their threads (cut to 15 characters by Linux): "HTTP Client" is
// fetch's, "Worker" a Worker (the embedded database's), "HeapHelper", "Heap Helper Thread" and
// "...Collector Thread" are the collector's, "mi-scavenger" the allocator's.
function threadGroup(pid: number, tid: number, name: string): ThreadGroup {
  if (tid === pid) return 'main'
  if (name === 'HTTP Client') return 'fetch client'
  if (name === 'Worker') return 'database'
  if (/Heap|Helper|ollector|scavenger/.test(name)) return 'collector'
  return 'other'
}

/** CPU seconds each group of a process's threads has used so far, from /proc; null where that is not readable. */
export async function threadCpuSeconds(pid: number): Promise<Record<ThreadGroup, number> | null> {
  const totals: Record<ThreadGroup, number> = { main: 0, 'fetch client': 0, database: 0, collector: 0, other: 0 }
  let tids: string[]
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return null
  }
  for (const tid of tids) {
    try {
      const stat = await Bun.file(`/proc/${pid}/task/${tid}/stat`).text()
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      totals[threadGroup(pid, Number(tid), name)] += (Number(fields[11]) + Number(fields[12])) / 100
    } catch {
      // The thread ended while the list was read.
    }
  }
  return totals
}

/** The machine's CPU time so far, all cores summed, and the idle part of it, in seconds (from /proc/stat); null where that is not readable. */
export async function machineCpuSeconds(): Promise<{ idle: number; total: number } | null> {
  try {
    const line = (await Bun.file('/proc/stat').text()).split('\n')[0]!
    const ticks = line.trim().split(/\s+/).slice(1).map(Number)
    // idle and iowait; guest time is counted in user time already.
    return { idle: (ticks[3]! + (ticks[4] ?? 0)) / 100, total: ticks.slice(0, 8).reduce((sum, value) => sum + value, 0) / 100 }
  } catch {
    return null
  }
}

/** How busy all CPUs were over the next `windowMs`, from /proc/stat; null where that is not readable. */
export async function machineBusyPercent(windowMs: number): Promise<number | null> {
  const before = await machineCpuSeconds()
  await Bun.sleep(windowMs)
  const after = await machineCpuSeconds()
  if (!before || !after) return null
  const total = after.total - before.total
  return total > 0 ? (100 * (total - (after.idle - before.idle))) / total : null
}

/** Why `child` is no longer running (exit code or signal, and the end of its log), or null while it runs. */
export async function describeExit(name: string, child: Subprocess, logPath: string): Promise<string | null> {
  if (child.exitCode === null && child.signalCode === null) return null
  const tail = (await Bun.file(logPath).text().catch(() => '')).trim().split('\n').slice(-5).join(' / ')
  return `${name} exited (${child.exitCode ?? child.signalCode}); its log ends: ${tail || '(empty)'}`
}
