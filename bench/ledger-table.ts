// The markdown bench/ledger.ts prints and writes: a short header and one column per step.

import type { MachineInfo } from './machine-info'
import type { LedgerSizes, RebuildTimings, ReconcileTimings, ReportTimings, Timing } from './ledger-measure'

/** Everything measured after one step. */
export interface StepResult {
  rows: number
  loadS: number
  rowsLoaded: number
  sizes: LedgerSizes
  rowsInRange: number
  reports: ReportTimings
  rebuild: RebuildTimings
  /** null: redis-server is not installed. */
  reconcile: ReconcileTimings | null
}

export interface LedgerReport {
  command: string
  date: Date
  commit: string
  machine: MachineInfo
  postgres: { version: string; settings: [string, string][] }
  orgs: number
  writers: number
  batchRows: number
  steps: StepResult[]
  notes: string[]
}

const count = (value: number) => Math.round(value).toLocaleString('en-US')
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : value.toFixed(0))
const seconds = (valueMs: number) => `${(valueMs / 1000).toFixed(2)} s`
const timing = (value: Timing) => `${ms(value.firstMs)} / ${ms(value.medianMs)} ms`

function bytes(value: number): string {
  if (value >= 2 ** 30) return `${(value / 2 ** 30).toFixed(2)} GiB`
  if (value >= 2 ** 20) return `${(value / 2 ** 20).toFixed(1)} MiB`
  return `${(value / 2 ** 10).toFixed(0)} KiB`
}

function rollup(step: StepResult, table: string): string {
  const found = step.sizes.rollups.find((entry) => entry.table === table)
  return found ? `${count(found.rows)} rows, ${bytes(found.bytes)}` : 'n/a'
}

const noRedis = 'skipped: no redis-server'

const rows: [label: string, cell: (step: StepResult) => string][] = [
  ['load rate (rows/s, wall clock)', (step) => count(step.rowsLoaded / step.loadS)],
  ['rows added, in', (step) => `${count(step.rowsLoaded)} in ${step.loadS.toFixed(1)} s`],
  ['rows in usage_events', (step) => count(step.sizes.rows)],
  ['partitions, tables and indexes', (step) => bytes(step.sizes.partitionBytes)],
  ['bytes a row (tables and indexes)', (step) => count(step.sizes.partitionBytes / Math.max(1, step.sizes.rows))],
  ['database (pg_database_size)', (step) => bytes(step.sizes.databaseBytes)],
  ['usage_rollup_quarters', (step) => rollup(step, 'usage_rollup_quarters')],
  ['usage_rollup_hours', (step) => rollup(step, 'usage_rollup_hours')],
  ['usage_rollup_days', (step) => rollup(step, 'usage_rollup_days')],
  ['usage_totals', (step) => rollup(step, 'usage_totals')],
  ["measured organization's rows in the last 30 days", (step) => count(step.rowsInRange)],
  ['report: 30 days by day, group_by=model (first / median of 5)', (step) => timing(step.reports.daysByModel)],
  ['report: 30 days by day, group_by=api_key_id (first / median of 5)', (step) => timing(step.reports.daysByKey)],
  ['report: 7 days by hour, group_by=model (first / median of 5)', (step) => timing(step.reports.hoursByModel)],
  ['balance: GET /v1/organization/balance (first / median of 5)', (step) => timing(step.reports.balance)],
  ['gateway start until it answers (median of 3)', (step) => `${ms(step.rebuild.startMs)} ms`],
  ['rebuild: first request after start (counters rebuilt from the ledger), median of 3', (step) => `${ms(step.rebuild.firstMs)} ms`],
  ['rebuild: next requests (median)', (step) => `${ms(step.rebuild.nextMs)} ms`],
  ['reconcile into an empty Redis (every organization rebuilt, then its 5 s wait for late rows)', (step) => (step.reconcile ? seconds(step.reconcile.rebuildMs) : noRedis)],
  ['reconcile --dry-run (each batch of 50 organizations waits 2 s for rows to land)', (step) => (step.reconcile ? seconds(step.reconcile.dryRunMs) : noRedis)],
  ['reconcile --dry-run says', (step) => step.reconcile?.summary.replaceAll('|', '/') ?? noRedis],
]

/** The header and the table, in markdown. */
export function renderLedgerReport(report: LedgerReport): string {
  const { machine, postgres } = report
  const settings = postgres.settings.map(([name, value]) => `${name} ${value}`).join(', ')
  const header = [
    '# The usage ledger at scale',
    '',
    `Measured ${report.date.toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${report.command}\`, commit ${report.commit}, on ${machine.cpuModel} (${machine.cores} cores, ${machine.memoryGiB} GiB), ${machine.kernel}, bun ${machine.bunVersion}; ${postgres.version} (${settings}).`,
    '',
    `Synthetic rows are copied into usage_events by ${report.writers} psql processes at once, ${count(report.batchRows)} rows a COPY (one run of the rollup trigger each).`,
    `The measured organization has 10% of them, over its last 30 days (50 keys in 5 projects, 4 models); ${count(report.orgs - 1)} other organizations the rest, over 300 days.`,
    'Each step adds rows to the one before; after it the tables are analyzed and a gateway on the database answers as the organization\'s owner (times in ms, over loopback).',
  ]
  const table = [
    `| after the step | ${report.steps.map((step) => `${count(step.rows)} rows`).join(' | ')} |`,
    `| --- | ${report.steps.map(() => '---:').join(' | ')} |`,
    ...rows.map(([label, cell]) => `| ${label} | ${report.steps.map(cell).join(' | ')} |`),
  ]
  return [...header, '', ...table, ...(report.notes.length > 0 ? ['', ...report.notes] : [])].join('\n')
}
