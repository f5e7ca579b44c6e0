import { writeFileSync } from 'node:fs'

/** A process's memory as /proc/PID/status has it, in KiB. */
export interface ProcessMemory {
  /** VmRSS: resident now. */
  rssKiB: number
  /** VmHWM: the most it has been resident since it started, or since `resetPeakRss`. */
  peakKiB: number
  /** RssAnon: the heaps and stacks; the rest is mapped files (the Bun binary) and shared memory. */
  anonKiB: number
}

/** The memory figures of a /proc/PID/status text; null when one is missing. */
export function parseProcessMemory(status: string): ProcessMemory | null {
  const kib = (field: string) => {
    const match = status.match(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm'))
    return match ? Number(match[1]) : null
  }
  const rssKiB = kib('VmRSS')
  const peakKiB = kib('VmHWM')
  const anonKiB = kib('RssAnon')
  return rssKiB === null || peakKiB === null || anonKiB === null ? null : { rssKiB, peakKiB, anonKiB }
}

/** The memory of process `pid` now; null once it has exited (or where /proc is not readable). */
export async function readProcessMemory(pid: number): Promise<ProcessMemory | null> {
  try {
    return parseProcessMemory(await Bun.file(`/proc/${pid}/status`).text())
  } catch {
    return null
  }
}

/** Starts VmHWM of `pid` again from its resident set now (Linux 4.0 on); false where that is not allowed. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

/** KiB as MiB with one decimal, as the bench prints memory. */
export function mib(kib: number): string {
  return (kib / 1024).toFixed(1)
}
