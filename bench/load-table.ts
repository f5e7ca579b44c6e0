import type { LoadStats, LoadReport, Percentiles } from './load-stats'

const counted = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort(([, a], [, b]) => b - a)
    .map(([name, count]) => `${name} x${count}`)
    .join(', ')

const number = (value: number, digits = 1) => value.toFixed(digits)

/** The end-of-run summary, for people: what was loaded, how, and what came back. */
export function renderLoadTable(report: LoadReport): string {
  const { target, load, requests, tokens, errors } = report
  const how = [
    target.stream ? 'streamed' : null,
    target.max_tokens === null ? null : `max_tokens ${target.max_tokens}`,
    target.api_keys === 0 ? 'no API key' : `${target.api_keys} API key${target.api_keys === 1 ? '' : 's'} in turn`,
  ].filter(Boolean)
  const loop = load.loop === 'open' ? `open loop at ${load.rps} req/s, at most ${load.concurrency} in flight` : `closed loop, ${load.concurrency} in flight`
  const limits = [`${load.duration_s} s`, load.requests_limit === null ? null : `${load.requests_limit} requests`, `timeout ${load.timeout_s} s`].filter(Boolean)
  const lines = [
    `POST ${target.url}, model ${target.model}, ${how.join(', ')}`,
    `${loop}; ${limits.join(', ')}; ended by ${report.ended_by} after ${number(report.elapsed_s, 2)} s`,
    '',
    `requests     sent ${requests.sent}, answered ${requests.answered}, ok ${requests.ok}, failed ${requests.failed}` +
      (load.loop === 'open' ? `, dropped ${requests.dropped}, late ${requests.late} (sent > ${report.late_after_ms} ms after their time)` : '') +
      (requests.unfinished > 0 ? `, unfinished at the hard stop ${requests.unfinished}` : ''),
    `throughput   ${number(report.requests_per_s)} req/s answered, ${number(report.ok_per_s)} req/s ok`,
  ]
  if (target.endpoint === 'embeddings') {
    lines.push(`tokens       ${tokens.prompt} input tokens, ${number(tokens.prompt_per_s)} input tokens/s`)
  } else {
    const sources = [tokens.counted_from.usage > 0 ? `usage in ${tokens.counted_from.usage}` : null, tokens.counted_from.chunks > 0 ? `counted text events in ${tokens.counted_from.chunks}` : null].filter(Boolean)
    lines.push(`tokens       ${tokens.output} output tokens, ${number(tokens.output_per_s)} output tokens/s${sources.length > 0 ? ` (${sources.join(', ')})` : ''}`)
  }
  const rows: [string, Percentiles | null][] = [['latency ms', report.latency_ms], ['TTFT ms', report.ttft_ms], ['send lag ms', report.send_lag_ms]]
  const shown = rows.filter(([, values]) => values !== null) as [string, Percentiles][]
  lines.push('')
  if (shown.length > 0) {
    const cell = (text: string) => text.padStart(10)
    lines.push(`${''.padEnd(12)}${['p50', 'p90', 'p99', 'max', 'mean'].map(cell).join('')}`)
    for (const [name, values] of shown) {
      lines.push(`${name.padEnd(12)}${[values.p50, values.p90, values.p99, values.max, values.mean].map((value) => cell(number(value, 2))).join('')}`)
    }
  } else {
    lines.push('latency      no successful request')
  }
  lines.push('')
  if (errors.total === 0) {
    lines.push('errors       none')
  } else {
    lines.push(`errors       ${errors.total}`)
    if (Object.keys(errors.by_status).length > 0) lines.push(`  by status  ${counted(errors.by_status)}`)
    if (Object.keys(errors.by_code).length > 0) lines.push(`  by code    ${counted(errors.by_code)}`)
    if (errors.in_stream > 0) lines.push(`  in streams ${errors.in_stream} (error events in 200 streams)`)
    if (Object.keys(errors.transport).length > 0) lines.push(`  no answer  ${counted(errors.transport)}`)
    if (requests.unfinished > 0) lines.push(`  unfinished ${requests.unfinished} (in flight at the hard stop)`)
  }
  return lines.join('\n')
}

/** The live line: elapsed time, requests done, req/s over the last second, errors, p50 of the last second. */
export function createProgressLine(): (stats: LoadStats, elapsedMs: number) => string {
  let previousAnswered = 0
  let previousErrors = 0
  let previousLatencies = 0
  let previousAt = 0
  return (stats, elapsedMs) => {
    const answered = stats.answered + stats.transportErrors
    const seconds = (elapsedMs - previousAt) / 1000
    const rate = seconds > 0 ? (answered - previousAnswered) / seconds : 0
    const p50 = stats.latencies.percentiles(previousLatencies)?.p50
    const line =
      `${number(elapsedMs / 1000)} s  ${stats.answered} answered  ${number(rate)} req/s  ` +
      `${stats.failed} errors (${stats.failed - previousErrors} new)  p50 ${p50 === undefined ? '-' : `${number(p50, 2)} ms`}` +
      (stats.dropped > 0 ? `  ${stats.dropped} dropped` : '')
    previousAnswered = answered
    previousErrors = stats.failed
    previousLatencies = stats.latencies.length
    previousAt = elapsedMs
    return line
  }
}
