import { describe, expect, test } from 'bun:test'
import type { MachineInfo } from '../../bench/machine-info'
import { failuresOf, growthPerMinuteMiB, renderMemoryReport, type GatewayMemory, type MemoryReport, type MinuteOfLoad } from '../../bench/memory-report'

const machine: MachineInfo = { cores: 2, cpuModel: 'test CPU', memoryGiB: 4, kernel: 'Linux 6', bunVersion: '1.4.4', commit: 'abc1234' }
const memory = (rssMiB: number, peakMiB = rssMiB): GatewayMemory => ({ rssKiB: rssMiB * 1024, peakKiB: peakMiB * 1024, anonKiB: (rssMiB - 40) * 1024, heapUsedKiB: 12 * 1024 })
const minute = (index: number, rssMiB: number, unexpected: Record<string, number> = {}): MinuteOfLoad => ({
  minute: index,
  rssKiB: rssMiB * 1024,
  heapUsedKiB: 16 * 1024,
  byKind: { chat: { sent: 100, expected: 100, dropped: 0, unexpected } },
})

function report(overrides: { streamsMiB?: number; endMiB?: number; completed?: number; minutes?: MinuteOfLoad[] } = {}): MemoryReport {
  const minutes = overrides.minutes ?? [minute(1, 100), minute(2, 101)]
  return {
    date: new Date('2026-12-01T12:00:00Z'),
    machine,
    command: 'bun bench/memory.ts --minutes 2',
    settings: { minutes: minutes.length, streams: 1000, rps: 1000, concurrency: 256, keys: 1000, kinds: [{ name: 'chat', share: 1 }], streamPace: '400 ms between chunks', database: 'Postgres' },
    idle: memory(80, 90),
    streams: {
      outcome: { streams: 1000, opened: 1000, openedInMs: 900, completed: overrides.completed ?? 1000, failures: overrides.completed ? { timeout: 1000 - overrides.completed } : {}, firstFailure: overrides.completed ? 'timeout' : null, elapsedMs: 8000 },
      memory: memory(overrides.streamsMiB ?? 120),
      stillOpen: 1000,
      peakKiB: 125 * 1024,
    },
    load: { before: memory(90), samples: [], minutes, end: memory(overrides.endMiB ?? 101, 130), peakKiB: 130 * 1024, settled: [{ atS: 30, rssKiB: 95 * 1024, heapUsedKiB: 14 * 1024 }] },
    peaksArePerPhase: true,
    notes: [],
  }
}

describe('bench/memory-report.ts', () => {
  test('says whether each target of 150 MB (143.1 MiB) was met', () => {
    const markdown = renderMemoryReport(report({ streamsMiB: 144, endMiB: 143 }))

    expect(markdown).toContain('- resident set <= 150 MB (143.1 MiB) with 1,000 streams open: 144.0 MiB, **MISSED**')
    expect(markdown).toContain('- after 2 minutes of mixed load: 143.0 MiB, met (peak during the load 130.0 MiB, met)')
  })

  test('flags streams that failed and answers of the load not of their kind', () => {
    const failures = failuresOf(report({ completed: 990, minutes: [minute(1, 100, { 'status 503': 3 })] }))

    expect(failures).toEqual([
      '10 of 1000 streams failed (10 × timeout); the first: timeout',
      'answers of the mixed load not of their kind: 3 × chat: status 503',
    ])
  })

  test('finds no failure in a clean run', () => {
    expect(failuresOf(report())).toEqual([])
  })

  test('fits the growth over the minute ends from the second on', () => {
    expect(growthPerMinuteMiB([minute(1, 90), minute(2, 100), minute(3, 102), minute(4, 104)])).toBeCloseTo(2)
    expect(growthPerMinuteMiB([minute(1, 90), minute(2, 100)])).toBeNull()
  })
})
