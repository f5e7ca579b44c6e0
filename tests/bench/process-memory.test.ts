import { describe, expect, test } from 'bun:test'
import { mib, parseProcessMemory, readProcessMemory } from '../../bench/process-memory'

const status = ['Name:\tbun', 'VmPeak:\t 11534336 kB', 'VmHWM:\t  1125068 kB', 'VmRSS:\t   370892 kB', 'RssAnon:\t  323712 kB', 'RssFile:\t   47180 kB', 'Threads:\t12'].join('\n')

describe('bench/process-memory.ts', () => {
  test('reads VmRSS, VmHWM and RssAnon of a /proc/PID/status text, in KiB', () => {
    expect(parseProcessMemory(status)).toEqual({ rssKiB: 370_892, peakKiB: 1_125_068, anonKiB: 323_712 })
  })

  test('gives null when a figure is missing, as for a kernel thread', () => {
    expect(parseProcessMemory('Name:\tkthreadd\nThreads:\t1')).toBeNull()
  })

  test('reads this process, whose peak is at least its resident set', async () => {
    const memory = await readProcessMemory(process.pid)

    expect(memory!.rssKiB).toBeGreaterThan(0)
    expect(memory!.peakKiB).toBeGreaterThanOrEqual(memory!.rssKiB)
  })

  test('prints KiB as MiB with one decimal', () => {
    expect(mib(153_600)).toBe('150.0')
  })
})
