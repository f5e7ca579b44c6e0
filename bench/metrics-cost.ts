// What recording Prometheus metrics costs the gateway: scenario (b) once more on a second gateway
// started with METRICS=off, the two taken in turns, compared by req/s and by the gateway's CPU per
// request. Flat out, CPU per request moves with how many requests share a turn of the event loop,
// and that with whatever else runs on the cores; so the pair is measured once more at one fixed
// rate (an open loop of bench/load.ts), where both gateways see the same arrivals.

import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { createScratchDatabase, startGateway, type GatewayLaunch, type RunningGateway } from './gateway-process'
import { requestsPerSecond } from './load-result'
import type { LoadReport } from './load-stats'
import { percentile } from './percentile'
import { cpuSeconds, waitUntilQuiet, type ProcessGroup } from './process-group'
import type { BenchReport, ScenarioOutcome } from './report'

export const metricsOffLabel = 'gateway to the fake upstream, metrics off (METRICS=off)'

/** The twin of the gateway under test with METRICS=off, in a directory (and database) of its own. */
export async function startMetricsOffGateway(launch: GatewayLaunch, postgresUrl: string | null, afterStop: (() => Promise<void>)[]): Promise<RunningGateway> {
  const workDir = join(launch.workDir, 'metrics-off')
  mkdirSync(workDir)
  let databaseUrl: string | null = null
  if (postgresUrl) {
    const scratch = await createScratchDatabase(postgresUrl)
    afterStop.push(() => scratch.drop())
    databaseUrl = scratch.url
  }
  return startGateway({ ...launch, workDir, databaseUrl, profileDir: null, env: { ...launch.env, METRICS: 'off' } })
}

/**
 * Whether the pair measures what it says: GET /metrics answers with samples on the gateway that
 * records them and 404 on the one with METRICS=off. A note when not, else null.
 */
export async function checkMetricsPair(metricsOn: RunningGateway, metricsOff: RunningGateway): Promise<string | null> {
  const scrape = async (gateway: RunningGateway) => {
    try {
      const response = await fetch(`${new URL(gateway.baseUrl).origin}/metrics`, { signal: AbortSignal.timeout(5_000) })
      const text = await response.text()
      return { status: response.status, hasSamples: /^[a-z_:][\w:]*(\{[^}]*\})? [\d.eE+-]+/m.test(text) }
    } catch (error) {
      return { status: 0, hasSamples: false, error: (error as Error).message }
    }
  }
  const [on, off] = await Promise.all([scrape(metricsOn), scrape(metricsOff)])
  if (on.status === 200 && on.hasSamples && off.status === 404) return null
  return `The metrics pair may not measure metrics: GET /metrics answered ${on.status}${on.hasSamples ? ' with samples' : ' without samples'} on (b) and ${off.status} on (i), where 200 with samples and 404 were expected.`
}

/** The gateway's CPU per request (all its threads), in microseconds; null when not measured. */
export function gatewayUsPerRequest(outcome: ScenarioOutcome): number | null {
  return outcome.cpuUsPerRequest ? Object.values(outcome.cpuUsPerRequest).reduce((sum, us) => sum + us, 0) : null
}

const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50)

/** One gateway's share of a fixed-rate round. */
export interface FixedRateSample {
  /** The gateway's CPU (all threads) per successful request, in microseconds. */
  cpuUs: number | null
  ok: number
  /** Failed or unfinished requests. */
  failed: number
  /** Arrivals that found every slot busy (a stall of the gateway). */
  dropped: number
  p50Ms: number | null
}

/** Both gateways at the same open-loop rate, round after round in turns. */
export interface FixedRateRounds {
  rps: number
  durationS: number
  rounds: { on: FixedRateSample; off: FixedRateSample }[]
}

/** Room for half a second's arrivals, so that a short stall of the gateway drops none. */
const fixedRateSlots = (rps: number) => Math.max(100, Math.ceil(rps / 2))

async function measureAtRate(gateway: RunningGateway, run: { bodyFile: string; rps: number; durationS: number; processes: ProcessGroup; logPath: string }): Promise<FixedRateSample> {
  const jsonPath = `${run.logPath}.json`
  const cmd = ['bun', join(import.meta.dir, 'load.ts'), '--url', `${gateway.baseUrl}/chat/completions`, '--body-file', run.bodyFile, '--keys', gateway.keysFile,
    '--rps', String(run.rps), '--concurrency', String(fixedRateSlots(run.rps)), '--duration', String(run.durationS), '--timeout', '2', '--json', jsonPath]
  const before = await cpuSeconds(gateway.pid)
  const child = run.processes.spawn(cmd, { env: { ...Bun.env } as Record<string, string>, logPath: run.logPath })
  const exitCode = await child.exited
  const after = await cpuSeconds(gateway.pid)
  if (exitCode !== 0) throw new Error(`bench/load.ts exited with ${exitCode}:\n${(await Bun.file(run.logPath).text()).slice(-2000)}`)
  const report = (await Bun.file(jsonPath).json()) as LoadReport
  const ok = report.requests.ok
  return {
    cpuUs: before === null || after === null || ok === 0 ? null : ((after - before) * 1e6) / ok,
    ok,
    failed: report.requests.failed,
    dropped: report.requests.dropped,
    p50Ms: report.latency_ms?.p50 ?? null,
  }
}

/** The two gateways at `rps` for `durationS` each, `rounds` times in turns (after one unrecorded round each). */
export async function measureMetricsAtRate(
  pair: { on: RunningGateway; off: RunningGateway },
  run: { bodyFile: string; rps: number; durationS: number; rounds: number; processes: ProcessGroup; workDir: string },
): Promise<FixedRateRounds> {
  const rounds: FixedRateRounds['rounds'] = []
  for (let round = 0; round <= run.rounds; round++) {
    const measure = (gateway: RunningGateway, name: string) =>
      measureAtRate(gateway, { ...run, durationS: round === 0 ? Math.min(5, run.durationS) : run.durationS, logPath: join(run.workDir, `load-metrics-${name}-${round}.log`) })
    console.error(round === 0 ? `warming the metrics pair at ${run.rps} req/s ...` : `measuring the metrics pair at ${run.rps} req/s for ${run.durationS} s, round ${round} of ${run.rounds} ...`)
    // They swap places every round, so that neither always follows the other, and each waits for both to be idle.
    const measured: Partial<Record<'on' | 'off', FixedRateSample>> = {}
    for (const side of round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      await waitUntilQuiet([pair.on.pid, pair.off.pid])
      measured[side] = await measure(pair[side], side)
    }
    if (round > 0) rounds.push({ on: measured.on!, off: measured.off! })
  }
  return { rps: run.rps, durationS: run.durationS, rounds }
}

function fixedRateLines(measured: FixedRateRounds): string[] {
  const pairs = measured.rounds.flatMap(({ on, off }) => (on.cpuUs === null || off.cpuUs === null ? [] : [[on.cpuUs, off.cpuUs] as const]))
  if (pairs.length === 0) return [`- at ${measured.rps} req/s: not measured (no CPU figures)`]
  const costUs = median(pairs.map(([onUs, offUs]) => onUs - offUs))
  const offUs = median(pairs.map(([, us]) => us))
  const total = (figure: 'failed' | 'dropped') => measured.rounds.reduce((sum, { on, off }) => sum + on[figure] + off[figure], 0)
  const p50 = (side: 'on' | 'off') => median(measured.rounds.map((round) => round[side].p50Ms ?? Number.NaN).filter(Number.isFinite))
  return [
    `- at a fixed ${measured.rps} req/s (open loop, ${pairs.length} rounds of ${measured.durationS} s each, in turns): the gateway's CPU per request ` +
      `${median(pairs.map(([us]) => us)).toFixed(1)} us with metrics, ${offUs.toFixed(1)} us without; **recording metrics costs ${costUs.toFixed(1)} us a request ` +
      `(${((costUs / offUs) * 100).toFixed(1)}%)**, the median of the rounds' differences (${pairs.map(([a, b]) => (a - b).toFixed(1)).join(', ')} us); ` +
      `latency p50 ${p50('on').toFixed(2)} ms against ${p50('off').toFixed(2)} ms` +
      (total('failed') > 0 ? `; **${total('failed')} requests failed**` : '') +
      (total('dropped') > 0 ? `; ${total('dropped')} arrivals dropped while ${fixedRateSlots(measured.rps)} were in flight` : ''),
  ]
}

/** The markdown lines on (b) against (i): req/s, CPU per request, and the difference; empty without both. */
export function metricsCostLines(report: BenchReport): string[] {
  const on = report.scenarios.find((scenario) => scenario.id === 'b')
  const off = report.scenarios.find((scenario) => scenario.id === 'i')
  if (!on?.result || !off?.result) return []
  const onRounds = on.roundsGatewayUs ?? [gatewayUsPerRequest(on)]
  const offRounds = off.roundsGatewayUs ?? [gatewayUsPerRequest(off)]
  const pairs = onRounds.flatMap((onUs, index) => (onUs === null || offRounds[index] == null ? [] : [[onUs, offRounds[index]!] as const]))
  if (pairs.length === 0) return []
  // Rounds were taken in turns, so each round of (b) has its (i) beside it: the median of the round-by-round differences.
  const costUs = median(pairs.map(([onUs, offUs]) => onUs - offUs))
  const onUs = median(pairs.map(([us]) => us))
  const offUs = median(pairs.map(([, us]) => us))
  const onRps = requestsPerSecond(on.result)
  const offRps = requestsPerSecond(off.result)
  const rounds = pairs.length > 1 ? ` (medians of ${pairs.length} rounds; round by round: ${pairs.map(([a, b]) => (a - b).toFixed(1)).join(', ')} us)` : ' (one round)'
  return [
    'Metrics cost, (b) against (i): the same gateway and load with METRICS=off, taken in turns:',
    '',
    `- flat out, req/s: ${onRps.toFixed(0)} with metrics, ${offRps.toFixed(0)} without (${(((onRps - offRps) / offRps) * 100).toFixed(1)}%)`,
    `- flat out, the gateway's CPU per request: ${onUs.toFixed(1)} us with metrics, ${offUs.toFixed(1)} us without: ${costUs.toFixed(1)} us a request (${((costUs / offUs) * 100).toFixed(1)}%)${rounds}`,
    ...(report.metricsAtRate ? fixedRateLines(report.metricsAtRate) : []),
    '',
  ]
}
