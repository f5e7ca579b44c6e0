import { egpForChart, egpToMicros, microsToEgp } from '../../lib/format'
import type { Balance, UsageBucket } from '../../lib/sdk'

export type GroupField = 'model' | 'project_id' | 'api_key_id'
type UsageResult = UsageBucket['results'][number]

/** Names of projects and keys by id, from the balance's spend lines. */
export interface Names {
  projects: Map<string, string>
  keys: Map<string, string>
}

export function namesFrom(balance: Balance | undefined): Names {
  return {
    projects: new Map((balance?.projects ?? []).map((line) => [line.id, line.name])),
    keys: new Map((balance?.api_keys ?? []).map((line) => [line.id, line.name])),
  }
}

/** What a result is a total of, for people: the model, or the project's or key's name. */
export function groupLabel(result: UsageResult, field: GroupField | null, names: Names): string {
  if (field === null) return 'All usage'
  if (field === 'model') return result.model ?? 'Unknown model'
  if (field === 'project_id') return result.project_id === null ? 'Unknown project' : (names.projects.get(result.project_id) ?? result.project_id)
  return result.api_key_id === null ? 'Unknown key' : (names.keys.get(result.api_key_id) ?? result.api_key_id)
}

/** One group's totals over the whole period; money stays exact. */
export interface GroupTotal {
  label: string
  requests: number
  inputTokens: number
  outputTokens: number
  costMicros: bigint
}

/** Totals per group over every bucket, the costliest first. */
export function totalsByGroup(buckets: UsageBucket[], field: GroupField | null, names: Names): GroupTotal[] {
  const totals = new Map<string, GroupTotal>()
  for (const bucket of buckets) {
    for (const result of bucket.results) {
      const label = groupLabel(result, field, names)
      const total = totals.get(label) ?? { label, requests: 0, inputTokens: 0, outputTokens: 0, costMicros: 0n }
      total.requests += result.num_model_requests
      total.inputTokens += result.input_tokens
      total.outputTokens += result.output_tokens
      total.costMicros += egpToMicros(result.cost_egp)
      totals.set(label, total)
    }
  }
  return [...totals.values()].sort((a, b) => (b.costMicros > a.costMicros ? 1 : b.costMicros < a.costMicros ? -1 : b.requests - a.requests))
}

export type Metric = 'spend' | 'tokens' | 'requests'

/** The chart's data: bucket starts, and one series per group (the largest few, the rest as "Other"). */
export interface ChartData {
  times: number[]
  series: { label: string; values: number[] }[]
}

const maxSeries = 6

function metricOf(result: UsageResult, metric: Metric): number {
  if (metric === 'spend') return egpForChart(result.cost_egp)
  if (metric === 'tokens') return result.input_tokens + result.output_tokens
  return result.num_model_requests
}

/** Per-bucket values of `metric` for each group; for display only (spend as a float of pounds). */
export function chartData(buckets: UsageBucket[], field: GroupField | null, names: Names, metric: Metric): ChartData {
  const order = totalsByGroup(buckets, field, names).map((total) => total.label)
  const shown = order.slice(0, order.length > maxSeries ? maxSeries - 1 : maxSeries)
  const labels = order.length > shown.length ? [...shown, 'Other'] : shown
  const series = labels.map((label) => ({ label, values: buckets.map(() => 0) }))
  buckets.forEach((bucket, index) => {
    for (const result of bucket.results) {
      const label = groupLabel(result, field, names)
      const target = series.find((each) => each.label === label) ?? series.find((each) => each.label === 'Other')
      if (target) target.values[index]! += metricOf(result, metric)
    }
  })
  return { times: buckets.map((bucket) => bucket.start_time), series }
}

/** The exact EGP total of some results. */
export function sumCost(results: UsageResult[]): string {
  return microsToEgp(results.reduce((sum, result) => sum + egpToMicros(result.cost_egp), 0n))
}
