import uPlot from 'uplot'
import { useEffect, useRef } from 'preact/hooks'
import { formatCompact, formatCount, formatEgp, microsToEgp } from '../../lib/format'
import type { ChartData, Metric } from './usage-series'

// Tell-apart colours with at least 3:1 contrast on both themes' backgrounds.
const palette = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b']

function cssVariable(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#555'
}

function formatValue(metric: Metric, value: number | null | undefined): string {
  if (value === null || value === undefined) return '—'
  if (metric === 'spend') return formatEgp(microsToEgp(BigInt(Math.round(value * 1_000_000))))
  return formatCount(value)
}

/**
 * A uPlot line chart of one metric per bucket, a line per group, its time axis in the billing time
 * zone. It is an image to assistive technology: the tables beside it hold the same numbers.
 */
export function UsageChart({ data, metric, timeZone, label, hourly }: { data: ChartData; metric: Metric; timeZone: string; label: string; hourly: boolean }) {
  const container = useRef<HTMLDivElement>(null)

  useEffect(() => {
    const element = container.current
    if (element === null) return
    const axis = { stroke: cssVariable('--text-muted'), grid: { stroke: cssVariable('--border'), width: 1 }, ticks: { stroke: cssVariable('--border') } }
    const options: uPlot.Options = {
      width: Math.max(element.clientWidth, 280),
      height: 240,
      tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), timeZone),
      scales: { x: { time: true }, y: { range: (_self, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { ...axis, space: hourly ? 60 : 50 },
        {
          ...axis,
          size: 70,
          // As many decimals as the step between ticks needs: 0.002, 0.004 rather than 0, 0.
          values: (_self, ticks, _axis, _space, step) =>
            ticks.map((tick) =>
              metric === 'spend'
                ? tick.toLocaleString(undefined, { maximumFractionDigits: Math.min(6, Math.max(0, -Math.floor(Math.log10(step || 1)))) })
                : formatCompact(tick),
            ),
        },
      ],
      legend: { live: true },
      series: [
        { label: hourly ? 'Hour' : 'Day' },
        ...data.series.map((series, index) => ({
          label: series.label,
          stroke: palette[index % palette.length],
          width: 2,
          points: { show: data.times.length < 40 },
          value: (_self: uPlot, value: number | null) => formatValue(metric, value),
        })),
      ],
    }
    const plot = new uPlot(options, [data.times, ...data.series.map((series) => series.values)], element)
    const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 280), height: 240 }))
    observer.observe(element)
    return () => {
      observer.disconnect()
      plot.destroy()
    }
  }, [data, metric, timeZone, hourly])

  return <div class="chart" ref={container} role="img" aria-label={label} />
}
