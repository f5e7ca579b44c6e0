import { useMemo, useState } from 'preact/hooks'
import { api } from '../../lib/api'
import { formatBucket, formatCount, formatEgp, microsToEgp } from '../../lib/format'
import type { Balance, UsageBucket } from '../../lib/sdk'
import { billingTimeZone } from '../../lib/session'
import { useResource } from '../../lib/use-resource'
import { DataTable, ErrorAlert, Section, SelectField, Skeleton } from '../../ui'
import { UsageChart } from '../usage/usage-chart'
import { periodStart, periods, type PeriodId } from '../usage/usage-period'
import { chartData, groupLabel, namesFrom, sumCost, totalsByGroup, type GroupField, type Metric } from '../usage/usage-series'

const groupings: { id: GroupField; label: string; plural: string }[] = [
  { id: 'model', label: 'Model', plural: 'model' },
  { id: 'project_id', label: 'Project', plural: 'project' },
  { id: 'api_key_id', label: 'API key', plural: 'API key' },
]

const metrics: { id: Metric; title: string }[] = [
  { id: 'spend', title: 'Spend (EGP)' },
  { id: 'tokens', title: 'Tokens' },
  { id: 'requests', title: 'Requests' },
]

/** Every bucket of the period (all pages). */
async function loadBuckets(start: number, width: '1d' | '1h', groupBy: GroupField, signal: AbortSignal): Promise<UsageBucket[]> {
  const buckets: UsageBucket[] = []
  for (let page: string | undefined; ; ) {
    const answer = await api().organization.usage.page({ start_time: start, bucket_width: width, group_by: [groupBy], limit: width === '1d' ? 31 : 168, page }, { signal })
    buckets.push(...answer.data)
    if (!answer.has_more || answer.next_page === null) return buckets
    page = answer.next_page
  }
}

/** Spend, tokens and requests per day or hour by model, project or key: charts and the same numbers as tables. */
export function UsageCharts({ balance }: { balance: Balance | undefined }) {
  const zone = billingTimeZone.value
  const [period, setPeriod] = useState<PeriodId>('30d')
  const [groupBy, setGroupBy] = useState<GroupField>('model')
  const { start, width } = periodStart(period, zone)
  // The start moves with the clock; refetch when the period, grouping or zone change, not every render.
  // Each answer remembers what it was asked, so that the page never mixes an old answer with new choices.
  const usage = useResource(
    (signal) => loadBuckets(start, width, groupBy, signal).then((buckets) => ({ buckets, groupBy, width, period })),
    [period, groupBy, zone],
  )
  const names = useMemo(() => namesFrom(balance), [balance])
  const shown = usage.data ?? { buckets: [], groupBy, width, period }
  const buckets = shown.buckets
  const grouping = groupings.find((each) => each.id === shown.groupBy)!
  const totals = useMemo(() => totalsByGroup(shown.buckets, shown.groupBy, names), [usage.data, names])
  // One object per chart for as long as the data lasts: a new one rebuilds the chart.
  const charts = useMemo(() => metrics.map((metric) => ({ metric, data: chartData(shown.buckets, shown.groupBy, names, metric.id) })), [usage.data, names])
  const hourly = shown.width === '1h'
  const periodLabel = periods.find((each) => each.id === shown.period)!.label

  return (
    <Section title="Usage">
      <div class="chart-controls">
        <SelectField label="Period" value={period} onChange={(event) => setPeriod(event.currentTarget.value as PeriodId)}>
          {periods.map((each) => (
            <option key={each.id} value={each.id}>
              {each.label}
            </option>
          ))}
        </SelectField>
        <SelectField label="Group by" value={groupBy} onChange={(event) => setGroupBy(event.currentTarget.value as GroupField)}>
          {groupings.map((each) => (
            <option key={each.id} value={each.id}>
              {each.label}
            </option>
          ))}
        </SelectField>
      </div>
      <ErrorAlert problem={usage.problem} onRetry={usage.reload} />
      {usage.loading && usage.data === undefined ? (
        <Skeleton lines={6} label="Loading usage…" />
      ) : (
        <>
          <DataTable
            caption={`Totals by ${grouping.plural}, ${periodLabel.toLowerCase()}`}
            rows={totals}
            rowKey={(total) => total.label}
            empty={<p class="muted">No usage in this period yet.</p>}
            columns={[
              { header: grouping.label, cell: (total) => <bdi>{total.label}</bdi> },
              { header: 'Requests', numeric: true, cell: (total) => formatCount(total.requests) },
              { header: 'Input tokens', numeric: true, cell: (total) => formatCount(total.inputTokens) },
              { header: 'Output tokens', numeric: true, cell: (total) => formatCount(total.outputTokens) },
              { header: 'Spend', numeric: true, cell: (total) => formatEgp(microsToEgp(total.costMicros)) },
            ]}
          />
          {totals.length > 0 &&
            charts.map(({ metric, data }) => (
              <div key={metric.id}>
                <h3>
                  {metric.title} per {hourly ? 'hour' : 'day'} by {grouping.plural}
                </h3>
                <UsageChart
                  data={data}
                  metric={metric.id}
                  timeZone={zone}
                  hourly={hourly}
                  label={`${metric.title} per ${hourly ? 'hour' : 'day'} by ${grouping.plural}, ${periodLabel.toLowerCase()}. The tables on this page give the same numbers.`}
                />
              </div>
            ))}
          {totals.length > 0 && (
            <details class="data-table">
              <summary>Every {hourly ? 'hour' : 'day'} as a table</summary>
              <DataTable
                caption={`Usage per ${hourly ? 'hour' : 'day'} by ${grouping.plural}`}
                rows={buckets.flatMap((bucket) => bucket.results.map((result) => ({ bucket, result })))}
                rowKey={({ bucket, result }) => `${bucket.start_time}/${groupLabel(result, shown.groupBy, names)}`}
                columns={[
                  { header: hourly ? 'Hour' : 'Day', cell: ({ bucket }) => formatBucket(bucket.start_time, shown.width, zone) },
                  { header: grouping.label, cell: ({ result }) => <bdi>{groupLabel(result, shown.groupBy, names)}</bdi> },
                  { header: 'Requests', numeric: true, cell: ({ result }) => formatCount(result.num_model_requests) },
                  { header: 'Tokens', numeric: true, cell: ({ result }) => formatCount(result.input_tokens + result.output_tokens) },
                  { header: 'Spend', numeric: true, cell: ({ result }) => formatEgp(sumCost([result])) },
                ]}
              />
            </details>
          )}
        </>
      )}
    </Section>
  )
}
