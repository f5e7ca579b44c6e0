import type { MachineInfo } from './machine-info'
import type { StreamsOutcome } from './memory-streams'
import { mib, type ProcessMemory } from './process-memory'

/** The figure the performance issue sets for both measures: 150 MB, 143.1 MiB. */
const targetBytes = 150_000_000
const target = `${targetBytes / 1e6} MB (${(targetBytes / 2 ** 20).toFixed(1)} MiB)`

/** One kind of request of the mixed load, as measured in one minute. */
export interface KindMinute {
  sent: number
  /** Answered as the kind expects: 200, or its 401 or 400. */
  expected: number
  /** Arrivals not sent because the kind's requests in flight were at their bound. */
  dropped: number
  /** Anything else, by status, error code or socket error. */
  unexpected: Record<string, number>
}

/** What the bench reads of the gateway: /proc's figures and its main thread's JavaScript heap in use (null without GET /metrics). */
export interface GatewayMemory extends ProcessMemory {
  heapUsedKiB: number | null
}

/** VmRSS and the heap in use at `atS` seconds into a phase. */
export interface MemorySample {
  atS: number
  rssKiB: number
  heapUsedKiB: number | null
}

export interface MinuteOfLoad {
  minute: number
  /** VmRSS and the heap in use when the minute's load had ended. */
  rssKiB: number
  heapUsedKiB: number | null
  byKind: Record<string, KindMinute>
}

export interface MemoryReport {
  date: Date
  machine: MachineInfo
  command: string
  settings: { minutes: number; streams: number; rps: number; concurrency: number; keys: number; kinds: { name: string; share: number }[]; streamPace: string; database: string }
  /** After start-up and the keys were made, once the gateway was quiet. */
  idle: GatewayMemory
  streams: { outcome: StreamsOutcome; memory: GatewayMemory; stillOpen: number; peakKiB: number }
  load: {
    before: GatewayMemory
    /** Every 10 s of the load, by seconds since it started. */
    samples: MemorySample[]
    minutes: MinuteOfLoad[]
    end: GatewayMemory
    /** VmHWM at the end of the load. */
    peakKiB: number
    /** 10, 20 and 30 s after the load stopped. */
    settled: MemorySample[]
  }
  /** Whether VmHWM was reset before the streams and before the load, so that each peak is its phase's; else every peak is since start-up. */
  peaksArePerPhase: boolean
  notes: string[]
}

/** Whether the run saw failures: a stream that failed or was not open at the sample, or an answer of the mixed load not of its kind. */
export function failuresOf(report: MemoryReport): string[] {
  const { outcome, stillOpen } = report.streams
  const failed: string[] = []
  if (outcome.completed < outcome.streams) failed.push(`${outcome.streams - outcome.completed} of ${outcome.streams} streams failed (${describeCounts(outcome.failures)}); the first: ${outcome.firstFailure}`)
  else if (stillOpen < outcome.streams) failed.push(`only ${stillOpen} of ${outcome.streams} streams were still open when the resident set was read`)
  const unexpected: Record<string, number> = {}
  for (const { byKind } of report.load.minutes) {
    for (const [kind, counts] of Object.entries(byKind)) {
      for (const [reason, count] of Object.entries(counts.unexpected)) unexpected[`${kind}: ${reason}`] = (unexpected[`${kind}: ${reason}`] ?? 0) + count
    }
  }
  if (Object.keys(unexpected).length > 0) failed.push(`answers of the mixed load not of their kind: ${describeCounts(unexpected)}`)
  return failed
}

function describeCounts(counts: Record<string, number>): string {
  return Object.entries(counts).map(([reason, count]) => `${count} × ${reason}`).join(', ')
}

function verdict(kib: number): string {
  return kib * 1024 <= targetBytes ? 'met' : '**MISSED**'
}

const thousands = (value: number) => value.toLocaleString('en-US')

/** Least-squares slope of VmRSS over the minute ends from the second on (the first holds the warm-up), in MiB a minute; null under three. */
export function growthPerMinuteMiB(minutes: MinuteOfLoad[]): number | null {
  const points = minutes.slice(1)
  if (points.length < 3) return null
  const meanX = points.reduce((sum, point) => sum + point.minute, 0) / points.length
  const meanY = points.reduce((sum, point) => sum + point.rssKiB / 1024, 0) / points.length
  const covariance = points.reduce((sum, point) => sum + (point.minute - meanX) * (point.rssKiB / 1024 - meanY), 0)
  const variance = points.reduce((sum, point) => sum + (point.minute - meanX) ** 2, 0)
  return covariance / variance
}

/** Markdown: how it was measured, the figures, the targets, and VmRSS minute by minute. */
export function renderMemoryReport(report: MemoryReport): string {
  const { machine, settings, idle, streams, load } = report
  const last = load.minutes.at(-1)
  const settled = load.settled.at(-1)
  const kindNames = settings.kinds.map((kind) => kind.name)
  const growth = growthPerMinuteMiB(load.minutes)
  const first = load.minutes[0]
  const heap = (kib: number | null) => (kib === null ? '-' : mib(kib))
  const row = (label: string, memory: GatewayMemory, peakKiB: number | null) => `| ${label} | ${mib(memory.rssKiB)} | ${mib(memory.anonKiB)} | ${heap(memory.heapUsedKiB)} | ${peakKiB === null ? '' : mib(peakKiB)} |`
  const minutesWord = settings.minutes === 1 ? 'minute' : 'minutes'
  const lines = [
    '# Resident memory of the gateway',
    '',
    `Measured ${report.date.toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${report.command}\` on ${machine.cpuModel} (${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.kernel}), bun ${machine.bunVersion}, commit ${machine.commit}.`,
    `One gateway (${settings.database}) with ${thousands(settings.keys)} API keys. VmRSS, RssAnon and VmHWM (the peak) of its process from /proc/PID/status, and its main thread's JavaScript heap in use (\`nodejs_heap_size_used_bytes\` of GET /metrics: the engine's own count, not a part of VmRSS, and it can exceed RssAnon), in MiB (2^20 bytes).`,
    report.peaksArePerPhase ? 'VmHWM was reset (/proc/PID/clear_refs) before the streams and before the load: each peak is its phase\'s; on the idle row, start-up\'s.' : 'Every peak is VmHWM since start-up: /proc/PID/clear_refs could not be written.',
    'Settled: at least 30 s after the phase before it, and VmRSS within 2 MiB over 10 s (the gateway gives back what start-up freed some 10 s later, not at once).',
    `Streams: ${thousands(settings.streams)} streamed chats sent at once (a key each) to a fake upstream that waits ${settings.streamPace}, read while all were open, then to their \`data: [DONE]\`.`,
    `Mixed load: ${settings.minutes} ${minutesWord} at ${thousands(settings.rps)} requests a second in an open loop (bench/load.ts, one process a kind, restarted each minute): ${settings.kinds.map((kind) => `${kind.name} ${Math.round(kind.share * 100)}%`).join(', ')}.`,
    '',
    '## Targets',
    '',
    `- resident set <= ${target} with ${thousands(settings.streams)} streams open: ${mib(streams.memory.rssKiB)} MiB, ${verdict(streams.memory.rssKiB)}`,
    `- after ${settings.minutes} ${minutesWord} of mixed load: ${mib(load.end.rssKiB)} MiB, ${verdict(load.end.rssKiB)} (peak during the load ${mib(load.peakKiB)} MiB, ${verdict(load.peakKiB)})`,
    '',
    '## Figures',
    '',
    '| when | VmRSS | RssAnon | JS heap used | peak of the phase |',
    '| --- | ---: | ---: | ---: | ---: |',
    row('idle after start-up (keys made, settled)', idle, idle.peakKiB),
    row(`${thousands(streams.stillOpen)} of ${thousands(settings.streams)} streams open`, streams.memory, streams.peakKiB),
    row('before the mixed load (streams ended, settled)', load.before, null),
    row('end of the mixed load', load.end, load.peakKiB),
    ...(settled ? [`| ${settled.atS} s after the load stopped | ${mib(settled.rssKiB)} | | ${heap(settled.heapUsedKiB)} | |`] : []),
    '',
    `Streams: ${thousands(streams.outcome.opened)} had first bytes within ${(streams.outcome.openedInMs / 1000).toFixed(1)} s, ${thousands(streams.outcome.completed)} ended with \`data: [DONE]\`` +
      `${streams.outcome.completed < streams.outcome.streams ? `; **${thousands(streams.outcome.streams - streams.outcome.completed)} failed** (${describeCounts(streams.outcome.failures)})` : ''}.`,
    ...(growth === null ? [] : [`VmRSS grew ${growth.toFixed(2)} MiB a minute over the minute ends from the second on (least squares); from the end of minute 1 to the end: ${first && last ? `${((last.rssKiB - first.rssKiB) / 1024).toFixed(1)} MiB` : '-'}.`]),
    '',
    '## Minute by minute',
    '',
    `VmRSS and the JavaScript heap in use at the end of each minute, in MiB, and the requests of each kind answered as expected (200, or the 401 and 400 asked for); dropped: arrivals not sent because ${settings.concurrency} of the kind were in flight.`,
    '',
    `| minute | VmRSS | change | JS heap | ${kindNames.join(' | ')} | dropped | unexpected |`,
    `| ---: | ---: | ---: | ---: | ${kindNames.map(() => '---:').join(' | ')} | ---: | --- |`,
    ...load.minutes.map((minute, index) => {
      const previous = index === 0 ? load.before.rssKiB : load.minutes[index - 1]!.rssKiB
      const change = (minute.rssKiB - previous) / 1024
      const kinds = kindNames.map((name) => thousands(minute.byKind[name]?.expected ?? 0))
      const dropped = Object.values(minute.byKind).reduce((sum, kind) => sum + kind.dropped, 0)
      const unexpected = Object.entries(minute.byKind).flatMap(([name, kind]) => Object.entries(kind.unexpected).map(([reason, count]) => `${name}: ${count} × ${reason}`))
      return `| ${minute.minute} | ${mib(minute.rssKiB)} | ${change >= 0 ? '+' : ''}${change.toFixed(1)} | ${heap(minute.heapUsedKiB)} | ${kinds.join(' | ')} | ${thousands(dropped)} | ${unexpected.join(', ') || '0'} |`
    }),
    '',
    `VmRSS every 10 s of the load (MiB): ${load.samples.map((sample) => mib(sample.rssKiB)).join(', ') || '-'}; after it stopped: ${load.settled.map((sample) => `${mib(sample.rssKiB)} at ${sample.atS} s`).join(', ') || '-'}.`,
    '',
    `JS heap in use at the same times (MiB): ${load.samples.map((sample) => heap(sample.heapUsedKiB)).join(', ') || '-'}; after it stopped: ${load.settled.map((sample) => `${heap(sample.heapUsedKiB)} at ${sample.atS} s`).join(', ') || '-'}.`,
  ]
  if (report.notes.length > 0) lines.push('', ...report.notes.map((note) => `- ${note}`))
  const failures = failuresOf(report)
  if (failures.length > 0) lines.push('', '**FAILED**:', ...failures.map((failure) => `- ${failure}`))
  return lines.join('\n')
}
