import { parseArgs } from 'node:util'
import type { LedgerStatus, RetentionReport } from '../adapters/postgres/ledger-retention'
import { loadConfig } from '../config'
import { callLedgerControl } from '../control-socket'
import { UsageError } from './cli-errors'
import { withDatabase } from './with-database'

export const ledgerUsage = `Usage: bun server/cli.ts ledger status
       bun server/cli.ts ledger retain --before YYYY-MM [--dry-run] [--archive DIR] [--wait-ms N]

status   lists the monthly partitions of the usage ledger (rows estimated, bytes) and from when raw
         usage rows are kept.
retain   removes the raw usage rows created before the start (UTC) of the month given: each month
         before it leaves with its partition, and rows before it in the default partition (and in
         the partition of rows written before migration 0010) are deleted. Balances, month spends,
         caps and usage reports do not change by one micro-EGP: they are kept in sums written with
         the rows, which stay. Reports then say from when raw rows exist. The current and the
         previous month always stay.
  --before YYYY-MM  the first month whose raw rows stay
  --dry-run         say what would be removed, and remove nothing
  --archive DIR     first write each part's rows to DIR/<partition>.csv.gz (CSV with a header)
  --wait-ms N       how long to wait for the embedded database's lock (default 10000)

Uses DATABASE_URL when set; otherwise the embedded database in DATA_DIR, through the running
gateway's control socket when there is one.`

interface LedgerArgs {
  action: 'status' | 'retain'
  beforeMs: number
  dryRun: boolean
  archiveDir: string | null
  waitMs: number
}

export async function runLedgerCommand(args: string[], env: Record<string, string | undefined>): Promise<void> {
  const options = parseLedgerArgs(args)
  const config = loadConfig(env)
  if (options.action === 'status') {
    const status = await withDatabase(config, { viaGateway: (dataDir) => callLedgerControl(dataDir, { action: 'status' }), direct: (database) => database.ledgerStatus() }, options.waitMs)
    console.log(describeStatus(status as LedgerStatus))
    return
  }
  const retention = { beforeMs: options.beforeMs, dryRun: options.dryRun, archiveDir: options.archiveDir }
  const report = await withDatabase(config, { viaGateway: (dataDir) => callLedgerControl(dataDir, { action: 'retain', ...retention }), direct: (database) => database.retainUsage(retention) }, options.waitMs)
  console.log(describeRetention(report as RetentionReport))
}

function describeStatus(status: LedgerStatus): string {
  const lines = status.partitions.map((partition) => {
    const range = partition.isDefault ? 'rows no month holds' : `${partition.fromMs === null ? 'the start' : month(partition.fromMs)} to before ${month(partition.untilMs!)}`
    return `  ${partition.name.padEnd(28)} ${range.padEnd(32)} ~${partition.estimatedRows} rows, ${megabytes(partition.bytes)}`
  })
  const kept = status.rawFromMs === null ? 'Raw usage rows are kept from the start.' : `Raw usage rows are kept from ${month(status.rawFromMs)}.`
  return [`Partitions of usage_events:`, ...lines, kept].join('\n')
}

function describeRetention(report: RetentionReport): string {
  const verb = report.dryRun ? 'would remove' : 'removed'
  if (report.parts.length === 0) return `Nothing to remove: no raw usage rows before ${month(report.beforeMs)}.`
  const lines = report.parts.map((part) => {
    const what = part.action === 'drop' ? `dropped whole (${megabytes(part.bytes)})` : `rows before ${month(report.beforeMs)} deleted`
    return `  ${part.partition}: ${part.rows} rows, ${what}${part.archive === null ? '' : `; archived to ${part.archive}`}`
  })
  const rows = report.parts.reduce((sum, part) => sum + part.rows, 0)
  return [
    `${report.dryRun ? 'Dry run: ' : ''}${verb} ${rows} raw usage rows created before ${month(report.beforeMs)}:`,
    ...lines,
    `Balances, month spends, caps and reports ${report.dryRun ? 'would not change' : 'did not change'}; raw rows are kept from ${month(report.rawFromMs)}.`,
    ...(report.dryRun || !report.parts.some((part) => part.action === 'delete') ? [] : ['Deleted rows free their space once VACUUM has run on those partitions.']),
  ].join('\n')
}

function month(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7)
}

function megabytes(bytes: number): string {
  return `${(bytes / 1_048_576).toFixed(1)} MB`
}

function parseLedgerArgs(args: string[]): LedgerArgs {
  let parsed
  try {
    parsed = parseArgs({ args, strict: true, allowPositionals: true, options: { before: { type: 'string' }, 'dry-run': { type: 'boolean' }, archive: { type: 'string' }, 'wait-ms': { type: 'string' } } })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const { positionals, values } = parsed
  const [action, ...extra] = positionals
  if (action !== 'status' && action !== 'retain') throw new UsageError(`ledger takes status or retain; got ${action === undefined ? 'neither' : JSON.stringify(action)}`)
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`)
  const waitMs = values['wait-ms'] === undefined ? 10_000 : /^\d{1,9}$/.test(values['wait-ms']) ? Number(values['wait-ms']) : Number.NaN
  if (Number.isNaN(waitMs)) throw new UsageError(`--wait-ms takes a whole number of milliseconds; got ${JSON.stringify(values['wait-ms'])}`)
  if (action === 'status') {
    if (values.before !== undefined || values['dry-run'] || values.archive !== undefined) throw new UsageError('ledger status takes no --before, --dry-run or --archive')
    return { action, beforeMs: 0, dryRun: false, archiveDir: null, waitMs }
  }
  const before = /^(\d{4})-(0[1-9]|1[0-2])$/.exec(values.before ?? '')
  if (!before) throw new UsageError(`--before takes a month as YYYY-MM; got ${values.before === undefined ? 'nothing' : JSON.stringify(values.before)}`)
  return { action, beforeMs: Date.UTC(Number(before[1]), Number(before[2]) - 1, 1), dryRun: values['dry-run'] ?? false, archiveDir: values.archive ?? null, waitMs }
}
