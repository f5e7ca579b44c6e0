import { requestsPerSecond, totalErrors, type LoadResult } from './load-result'
import type { LoadTool } from './load-tool'
import type { MachineInfo } from './machine-info'
import type { TtfbResult } from './ttfb'
import { threadGroups, type ThreadGroup } from './process-group'
import { metricsCostLines, type FixedRateRounds } from './metrics-cost'

/** One throughput scenario: measured, failed before measuring, or skipped. */
export interface ScenarioOutcome {
  /**
   * (a) to (e) and (j) non-streamed chat; (f) to (h), (k) and (l) streamed, measured against (f);
   * (i) is (b) with METRICS=off.
   */
  id: 'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'g' | 'h' | 'i' | 'j' | 'k' | 'l'
  label: string
  result: LoadResult | null
  /** Why it was not measured: the gateway is missing, or the check request failed. */
  notMeasured: string | null
  /** Share of one core used during the measurement, per process. */
  /** `gatewayMain`: the gateway's main thread alone, which serves every request. */
  cpuPercent: { gateway: number | null; gatewayMain: number | null; upstream: number | null }
  /** The gateway's (or the bare proxy's) CPU per request, in microseconds, by group of threads. */
  cpuUsPerRequest?: Record<ThreadGroup, number> | null
  /** CPU per request, in microseconds, of the local servers the gateway used (Redis, Postgres), by name. */
  serverUsPerRequest?: Record<string, number>
  /**
   * The machine's time per request, in microseconds: the upstream's and the load tool's CPU, the
   * idle time of all cores, and all cores' time (cores x wall time) that these and the rest share.
   */
  machineUsPerRequest?: { upstream: number | null; loadTool: number | null; idle: number; total: number }
  /** req/s of every round when there were several; the rest of the outcome is the median round's. */
  roundsRps?: number[]
  /** The gateway's CPU per request (all threads, us) of every round when there were several. */
  roundsGatewayUs?: (number | null)[]
}

export interface BenchReport {
  date: Date
  machine: MachineInfo
  tool: LoadTool
  settings: { durationS: number; rounds: number; connections: number; threads: number; keys: number; ttfbRequests: number; redis: boolean }
  scenarios: ScenarioOutcome[]
  ttfb: TtfbResult[]
  /** The gateway with and without METRICS at one fixed rate, when measured. */
  metricsAtRate?: FixedRateRounds | null
  notes: string[]
}

/**
 * What the team is judged on: the gateway against the bare proxy (d) of the same run, as a share
 * of its throughput and in CPU per request beyond its own (Redis's included when used), the main
 * thread's CPU a stream, the p99 and the added time to first byte.
 */
export const targets = {
  minShareOfBareProxy: { embedded: 0.6, redis: 0.5 },
  maxCpuUsBeyondBareProxy: { embedded: 30, redis: 40 },
  maxRedisUs: 10,
  maxStreamMainUs: 60,
  maxGatewayP99Ms: 10,
  maxAddedTtfbMs: 1,
}

const ms = (us: number) => (us / 1000).toFixed(2)
const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a')
const percent = (share: number) => `${(share * 100).toFixed(0)}%`

function errorCell(result: LoadResult): string {
  const total = totalErrors(result)
  if (total === 0) return '0'
  const parts = Object.entries(result.errors).filter(([, count]) => count > 0).map(([kind, count]) => `${kind} ${count}`)
  return `**${total}** (${parts.join(', ')})`
}

function roundsCell(scenario: ScenarioOutcome): string {
  if (!scenario.roundsRps || scenario.roundsRps.length < 2) return ''
  return ` (${Math.round(Math.min(...scenario.roundsRps))}-${Math.round(Math.max(...scenario.roundsRps))})`
}

/** Whether a scenario streams: measured against (f), direct streams, rather than (a). */
export function isStreamed(id: ScenarioOutcome['id']): boolean {
  return id === 'f' || id === 'g' || id === 'h' || id === 'k' || id === 'l'
}

function throughputTable(report: BenchReport): string[] {
  const directOf = (id: ScenarioOutcome['id']) => report.scenarios.find((scenario) => scenario.id === (isStreamed(id) ? 'f' : 'a'))?.result
  const lines = [
    '| scenario | req/s | p50 ms | p90 ms | p99 ms | errors | vs direct | CPU gateway (main thread) | CPU upstream |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const scenario of report.scenarios) {
    const { result } = scenario
    if (!result) {
      lines.push(`| (${scenario.id}) ${scenario.label} | ${scenario.notMeasured ?? 'not measured'} | | | | | | | |`)
      continue
    }
    const direct = directOf(scenario.id)
    const share = direct ? percent(requestsPerSecond(result) / requestsPerSecond(direct)) : 'n/a'
    const cpu = (value: number | null) => (value === null ? '-' : `${value.toFixed(0)}%`)
    lines.push(
      `| (${scenario.id}) ${scenario.label} | ${requestsPerSecond(result).toFixed(0)}${roundsCell(scenario)} | ${ms(result.latency_us.p50)} | ` +
        `${ms(result.latency_us.p90)} | ${ms(result.latency_us.p99)} | ${errorCell(result)} | ${share} | ` +
        `${cpu(scenario.cpuPercent.gateway)}${scenario.cpuPercent.gatewayMain === null ? '' : ` (${cpu(scenario.cpuPercent.gatewayMain)})`} | ${cpu(scenario.cpuPercent.upstream)} |`,
    )
  }
  return lines
}

function threadTable(report: BenchReport): string[] {
  const rows = report.scenarios.filter((scenario) => scenario.id !== 'a' && scenario.id !== 'f' && scenario.result && scenario.cpuUsPerRequest)
  if (rows.length === 0) return []
  return [
    `CPU of the gateway (in (d), (e), (j), (k) and (l) the bare proxy) per request (in (g), (h), (k) and (l) per stream), by thread, in microseconds (from /proc, the median round):`,
    '',
    `| scenario | ${threadGroups.join(' | ')} | total |`,
    `|---|${threadGroups.map(() => '---:').join('|')}|---:|`,
    ...rows.map((scenario) => {
      const byGroup = scenario.cpuUsPerRequest!
      const total = threadGroups.reduce((sum, group) => sum + byGroup[group], 0)
      return `| (${scenario.id}) ${scenario.label} | ${threadGroups.map((group) => byGroup[group].toFixed(1)).join(' | ')} | ${total.toFixed(1)} |`
    }),
    '',
    ...serverLines(rows),
  ]
}

/** What the local Redis and Postgres servers spent per request, in their own processes. */
function serverLines(rows: ScenarioOutcome[]): string[] {
  const measured = rows.filter((scenario) => scenario.serverUsPerRequest && Object.keys(scenario.serverUsPerRequest).length > 0)
  if (measured.length === 0) return []
  const names = Object.keys(measured[0]!.serverUsPerRequest!)
  return [
    `CPU of the servers the gateway used, per request, in microseconds (their processes on this machine, from /proc, the median round; Postgres counts every backend, so its own work on the side too):`,
    '',
    `| scenario | ${names.join(' | ')} |`,
    `|---|${names.map(() => '---:').join('|')}|`,
    ...measured.map((scenario) => `| (${scenario.id}) ${scenario.label} | ${names.map((name) => (scenario.serverUsPerRequest![name] ?? 0).toFixed(1)).join(' | ')} |`),
    '',
  ]
}

/**
 * Where the machine's time went per request, every process that shares the cores in one row: what
 * a gateway's throughput could be is bounded by the cores' time over the sum of the others' parts.
 */
function machineTable(report: BenchReport): string[] {
  const rows = report.scenarios.filter((scenario) => scenario.result && scenario.machineUsPerRequest)
  if (rows.length === 0) return []
  const servers = [...new Set(rows.flatMap((scenario) => Object.keys(scenario.serverUsPerRequest ?? {})))]
  const cell = (value: number | null | undefined) => (value === null || value === undefined ? '-' : value.toFixed(1))
  return [
    `The machine's time per request (in (f) to (h), (k) and (l) per stream), in microseconds of CPU (the median round): the gateway (in (d), (e), (j), (k) and (l) the bare proxy), ` +
      `the upstream, the load tool${servers.map((name) => `, ${name}`).join('')}, the cores' idle time, the rest (the kernel's own threads, ` +
      `other processes), and all of it (cores x wall time over requests):`,
    '',
    `| scenario | gateway | upstream | load tool |${servers.map((name) => ` ${name} |`).join('')} idle | rest | all |`,
    `|---|---:|---:|---:|${servers.map(() => '---:|').join('')}---:|---:|---:|`,
    ...rows.map((scenario) => {
      const machine = scenario.machineUsPerRequest!
      const gateway = scenario.cpuUsPerRequest ? threadGroups.reduce((sum, group) => sum + scenario.cpuUsPerRequest![group], 0) : null
      const serverParts = servers.map((name) => scenario.serverUsPerRequest?.[name] ?? null)
      const known = [gateway, machine.upstream, machine.loadTool, ...serverParts, machine.idle].reduce<number>((sum, value) => sum + (value ?? 0), 0)
      return `| (${scenario.id}) ${scenario.label} | ${cell(gateway)} | ${cell(machine.upstream)} | ${cell(machine.loadTool)} |${serverParts.map((value) => ` ${cell(value)} |`).join('')} ${cell(machine.idle)} | ${cell(machine.total - known)} | ${cell(machine.total)} |`
    }),
    '',
  ]
}

function ttfbTable(report: BenchReport): string[] {
  if (report.ttfb.length === 0) return []
  const direct = report.ttfb[0]!
  const lines = [
    '| streamed, one at a time | first byte p50 ms | first byte p90 ms | whole stream p50 ms | whole stream p90 ms | added first byte p50 ms | errors |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ]
  for (const [index, row] of report.ttfb.entries()) {
    const added = index === 0 ? '-' : fixed(row.ttfbMs.p50 - direct.ttfbMs.p50, 3)
    const errors = row.errors === 0 ? '0' : `**${row.errors}** (${row.firstError ?? ''})`
    lines.push(
      `| ${row.name} | ${fixed(row.ttfbMs.p50, 3)} | ${fixed(row.ttfbMs.p90, 3)} | ${fixed(row.totalMs.p50, 3)} | ` +
        `${fixed(row.totalMs.p90, 3)} | ${added} | ${errors} |`,
    )
  }
  return lines
}

/** A scenario's CPU per request over all its threads, in microseconds. */
function usPerRequest(scenario: ScenarioOutcome): number | null {
  return scenario.cpuUsPerRequest ? threadGroups.reduce((sum, group) => sum + scenario.cpuUsPerRequest![group], 0) : null
}

/** The bare proxy's main thread a stream in (k) and (l), for beside (g)'s; empty when not measured. */
function bareStreamMain(report: BenchReport): string {
  const parts = (['k', 'l'] as const).flatMap((id) => {
    const main = report.scenarios.find((scenario) => scenario.id === id)?.cpuUsPerRequest?.main
    return main === undefined ? [] : [`(${id}) ${main.toFixed(1)} us`]
  })
  return parts.length > 0 ? ` (the bare proxy's: ${parts.join(', ')})` : ''
}

/** Targets met or missed, one line each; empty when the gateway was not measured. */
export function checkTargets(report: BenchReport): string[] {
  const bare = report.scenarios.find((scenario) => scenario.id === 'd')
  const viaUpstream = report.scenarios.find((scenario) => scenario.id === 'b')
  const lines: string[] = []
  const mark = (isMet: boolean) => (isMet ? 'met' : '**MISSED**')
  const stores = report.settings.redis ? 'redis' : 'embedded'
  if (bare?.result && viaUpstream?.result) {
    const share = requestsPerSecond(viaUpstream.result) / requestsPerSecond(bare.result)
    const minShare = targets.minShareOfBareProxy[stores]
    lines.push(`- (b)/(d), throughput through the gateway against the bare proxy >= ${minShare}: ${share.toFixed(2)}, ${mark(share >= minShare)}`)
    const gatewayUs = usPerRequest(viaUpstream)
    const bareUs = usPerRequest(bare)
    if (gatewayUs !== null && bareUs !== null) {
      const redisUs = viaUpstream.serverUsPerRequest?.Redis ?? 0
      const beyond = gatewayUs + redisUs - bareUs
      const maxBeyond = targets.maxCpuUsBeyondBareProxy[stores]
      const with_ = report.settings.redis ? ' (with Redis\'s)' : ''
      lines.push(`- the gateway's CPU a request${with_} beyond the bare proxy's <= ${maxBeyond} us: ${gatewayUs.toFixed(1)}${report.settings.redis ? ` + ${redisUs.toFixed(1)}` : ''} - ${bareUs.toFixed(1)} = ${beyond.toFixed(1)} us, ${mark(beyond <= maxBeyond)}`)
      if (report.settings.redis && viaUpstream.serverUsPerRequest?.Redis !== undefined) {
        lines.push(`- Redis CPU a request <= ${targets.maxRedisUs} us: ${redisUs.toFixed(1)} us, ${mark(redisUs <= targets.maxRedisUs)}`)
      }
    }
  }
  const streamed = report.scenarios.find((scenario) => scenario.id === 'g')
  if (streamed?.result && streamed.cpuUsPerRequest) {
    const mainUs = streamed.cpuUsPerRequest.main
    lines.push(`- (g) the main thread's CPU a stream (19 events) <= ${targets.maxStreamMainUs} us: ${mainUs.toFixed(1)} us, ${mark(mainUs <= targets.maxStreamMainUs)}${bareStreamMain(report)}`)
  }
  const byId = (id: ScenarioOutcome['id']) => report.scenarios.find((scenario) => scenario.id === id)?.result ?? null
  for (const id of ['b', 'c'] as const) {
    const result = byId(id)
    if (!result) continue
    const p99Ms = result.latency_us.p99 / 1000
    lines.push(`- gateway p99 < ${targets.maxGatewayP99Ms} ms (${id}): ${p99Ms.toFixed(2)} ms, ${mark(p99Ms < targets.maxGatewayP99Ms)}`)
  }
  const viaGatewayTtfb = report.ttfb[1]
  if (report.ttfb[0] && viaGatewayTtfb && viaGatewayTtfb.samples > 0) {
    const added = viaGatewayTtfb.ttfbMs.p50 - report.ttfb[0].ttfbMs.p50
    lines.push(`- added time to first byte < ${targets.maxAddedTtfbMs} ms at the median: ${added.toFixed(3)} ms, ${mark(added < targets.maxAddedTtfbMs)}`)
  }
  return lines
}

/** Requests that failed anywhere in the run; a run with any is flagged. */
export function countErrors(report: BenchReport): number {
  const load = report.scenarios.reduce((sum, scenario) => sum + (scenario.result ? totalErrors(scenario.result) : 0), 0)
  const failedChecks = report.scenarios.filter((scenario) => scenario.result === null && scenario.notMeasured?.startsWith('FAILED')).length
  return load + failedChecks + report.ttfb.reduce((sum, row) => sum + row.errors, 0)
}

/** The whole report as markdown: the same text is printed and written to bench/RESULTS.md. */
export function renderReport(report: BenchReport): string {
  const { machine, settings } = report
  const errors = countErrors(report)
  const targetLines = checkTargets(report)
  return [
    '# Benchmark of the inference core',
    '',
    `Made by \`bun bench/run.ts\` on ${report.date.toISOString().replace(/\.\d+Z$/, 'Z')}, commit ${machine.commit}.`,
    '',
    `- machine: ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, ${machine.kernel}`,
    `- bun ${machine.bunVersion}; load tool: ${report.tool.description}` + (report.tool.name === 'wrk' ? `, ${settings.threads} thread(s)` : ''),
    `- each scenario: ${settings.connections} keep-alive connections for ${settings.durationS} s after a warm-up, ` +
      (settings.rounds > 1 ? `${settings.rounds} rounds taken in turns (the median round is shown, the range of req/s in brackets), ` : '') +
      `non-streamed chat with max_tokens 16 (16 completion tokens), ${settings.keys} API key(s) in turn; (f) to (h), (k) and (l) the same chat streamed ` +
      `with stream_options.include_usage (19 events a stream), "vs direct" against (f) instead of (a); (i) is (b) on a second gateway started with METRICS=off, ` +
      `measured beside (b) (the two swap places every other round), for the cost of recording metrics; each scenario starts once the gateways are idle`,
    '- everything on 127.0.0.1, load tool, gateway and upstream sharing the cores',
    `- errors: socket errors and timeouts (2 s), plus answers ${report.tool.name === 'wrk' ? '>= 400' : 'outside 2xx'}; ` +
      'each scenario starts with one checked request (200, a chat.completion with 16 completion tokens; streamed, chunks ending in a usage chunk of 16 tokens and [DONE])',
    '- CPU: share of one core used by the process while the scenario ran, in brackets by its main thread alone, which serves every request (from /proc); in (d), (e), (j), (k) and (l) the gateway column is the bare proxy',
    '',
    errors > 0 ? `**FLAGGED: ${errors} failed request(s) or check(s) in this run; the numbers below are not clean.**\n` : '',
    ...throughputTable(report),
    '',
    ...threadTable(report),
    ...machineTable(report),
    ...(report.ttfb.length > 0
      ? [`Time to first byte: ${settings.ttfbRequests} sequential streamed requests per row (after a warm-up), rows taken in turns.`, '', ...ttfbTable(report), '']
      : []),
    ...(targetLines.length > 0 ? ['Targets:', '', ...targetLines, ''] : []),
    ...metricsCostLines(report),
    ...(report.notes.length > 0 ? ['Notes:', '', ...report.notes.map((note) => `- ${note}`), ''] : []),
  ]
    .filter((line, index, lines) => !(line === '' && lines[index - 1] === ''))
    .join('\n')
}
