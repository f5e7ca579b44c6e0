// What recording Prometheus metrics costs the gateway: scenario (b) once more on a second gateway
// started with METRICS=off, the two taken in turns, compared by req/s and by the gateway's CPU per
// request (the figure that does not move with what else shares the cores).

import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { createScratchDatabase, startGateway, type GatewayLaunch, type RunningGateway } from './gateway-process'
import { requestsPerSecond } from './load-result'
import { percentile } from './percentile'
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
  const rounds = pairs.length > 1 ? ` (medians of ${pairs.length} rounds; round by round: ${pairs.map(([a, b]) => (a - b).toFixed(1)).join(', ')} us)` : ' (one round: `--rounds 5` for a figure to rely on)'
  return [
    'Metrics cost, (b) against (i): the same gateway and load with METRICS=off, taken in turns:',
    '',
    `- req/s: ${onRps.toFixed(0)} with metrics, ${offRps.toFixed(0)} without (${(((onRps - offRps) / offRps) * 100).toFixed(1)}%)`,
    `- the gateway's CPU per request: ${onUs.toFixed(1)} us with metrics, ${offUs.toFixed(1)} us without; recording metrics costs ${costUs.toFixed(1)} us a request (${((costUs / offUs) * 100).toFixed(1)}%)${rounds}`,
    '',
  ]
}
