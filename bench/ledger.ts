// The usage ledger at scale: loads synthetic usage rows into Postgres through the gateway's write
// path (COPY into the partitioned usage_events, its rollup trigger on), in growing steps, and after
// each step measures what users and operators wait for: the usage reports and the balance, the
// rebuild of an organization's admission counters after a start, `reconcile`. Writes
// bench/RESULTS-ledger.md.
//
//   bun bench/ledger.ts --rows 100000000 [--orgs 100] [--steps 1000000,10000000,100000000]
//     [--database-url URL] [--keep] [--writers 2] [--batch 10000] [--out FILE] [--no-write]
//
// Without --database-url it works in a scratch database on postgres://postgres@127.0.0.1:5432,
// dropped at the end unless --keep; a database given is used as it is and never dropped.

import { mkdtempSync, rmSync, statfsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { SQL, Subprocess } from 'bun'
import { argValue, integerArg } from './arg-value'
import { startGateway } from './gateway-process'
import { startLedgerGateway, type LedgerGatewayLaunch } from './ledger-gateway'
import { createMonthPartitions, createOrganizations, loadStep } from './ledger-load'
import { analyzeLedger, measureRebuild, measureReconcile, measureReports, measureSizes, rowsInRange, signIn } from './ledger-measure'
import { measuredHistoryDays, planLedger } from './ledger-rows'
import { renderLedgerReport, type LedgerReport, type StepResult } from './ledger-table'
import { readMachineInfo } from './machine-info'
import { ProcessGroup } from './process-group'

const repoDir = new URL('..', import.meta.url).pathname
const defaultServerUrl = 'postgres://postgres@127.0.0.1:5432/postgres'
// What a row takes on disk before any was measured, and the margin a step needs beyond it.
const firstBytesPerRowGuess = 450
const diskMargin = 1.3

interface Options {
  rows: number
  orgs: number
  steps: number[]
  databaseUrl: string | null
  keep: boolean
  writers: number
  batchRows: number
  outPath: string | null
}

function parseOptions(args: string[]): Options {
  if (argValue(args, ['--rows']) === undefined) throw new Error('--rows N is required (the size of the ledger at the last step)')
  const rows = integerArg(args, 'rows', 0)
  const orgs = integerArg(args, 'orgs', 100)
  if (orgs < 2) throw new Error('--orgs counts the measured organization and at least one other')
  const rawSteps = argValue(args, ['--steps'])
  const asked = rawSteps === undefined ? [1_000_000, 10_000_000, 100_000_000] : rawSteps.split(',').map(Number)
  if (asked.some((step) => !Number.isInteger(step) || step < 1)) throw new Error(`--steps takes positive integers separated by commas, got ${rawSteps}`)
  const steps = [...new Set(asked.filter((step) => step < rows))].sort((a, b) => a - b)
  const out = argValue(args, ['--out']) ?? join(repoDir, 'bench', 'RESULTS-ledger.md')
  return {
    rows,
    orgs,
    steps: [...steps, rows],
    databaseUrl: argValue(args, ['--database-url']) ?? null,
    keep: args.includes('--keep'),
    writers: integerArg(args, 'writers', 2),
    batchRows: integerArg(args, 'batch', 10_000),
    outPath: args.includes('--no-write') ? null : resolve(out),
  }
}

/** The database of the run: the one given, or a scratch one on the default server. */
async function openDatabase(options: Options): Promise<{ url: string; drop: (() => Promise<void>) | null }> {
  if (options.databaseUrl) return { url: options.databaseUrl, drop: null }
  const name = `nilegate_ledger_bench_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = new Bun.SQL(defaultServerUrl, { max: 1 })
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await admin.close()
  }
  console.error(`scratch database ${name}`)
  const url = new URL(defaultServerUrl)
  url.pathname = `/${name}`
  const drop = async () => {
    const dropper = new Bun.SQL(defaultServerUrl, { max: 1 })
    try {
      await dropper.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    } finally {
      await dropper.close()
    }
  }
  return { url: url.toString(), drop }
}

function gitCommit(): string {
  const head = Bun.spawnSync(['git', 'rev-parse', '--short', 'HEAD'], { cwd: repoDir })
  if (head.exitCode !== 0) return 'unknown'
  // Results an earlier run wrote are not changes to what is measured.
  const status = Bun.spawnSync(['git', 'status', '--porcelain', '--', '.', ':(exclude)bench/RESULTS*.md'], { cwd: repoDir })
  return head.stdout.toString().trim() + (status.stdout.toString().trim() ? ' + local changes' : '')
}

async function postgresInfo(sql: SQL): Promise<{ version: string; settings: [string, string][]; dataDirectory: string | null }> {
  const [{ version }] = await sql`SELECT 'PostgreSQL ' || current_setting('server_version') AS version`
  const names = ['shared_buffers', 'work_mem', 'jit', 'max_wal_size', 'synchronous_commit', 'max_parallel_workers_per_gather']
  const settings: [string, string][] = []
  for (const name of names) settings.push([name, (await sql.unsafe(`SHOW ${name}`))[0][name]])
  // The data directory is shown to superusers (and pg_read_all_settings) only.
  const dataDirectory = await sql`SHOW data_directory`.then((found: any) => found[0].data_directory as string, () => null)
  return { version, settings, dataDirectory }
}

/** Free bytes of the file system holding `directory`, or null when this machine cannot see it. */
function freeBytes(directory: string | null): number | null {
  if (!directory) return null
  try {
    const found = statfsSync(directory)
    return Number(found.bavail) * Number(found.bsize)
  } catch {
    return null
  }
}

async function main(options: Options, processes: ProcessGroup, workDir: string, database: { url: string }, writers: Set<Subprocess>): Promise<void> {
  const sql = new Bun.SQL(database.url, { max: 2 })
  try {
    // The first start migrates the database and makes the tenant every later start signs in as.
    const first = await startGateway({ processes, workDir, repoDir, upstreamBaseUrl: 'http://127.0.0.1:9/v1', keys: 1, profileDir: null, databaseUrl: database.url })
    const { tenant } = first
    const { orgId } = await signIn(first.baseUrl, tenant)
    await first.stop()
    const launch: LedgerGatewayLaunch = { processes, repoDir, workDir, databaseUrl: database.url, catalogPath: join(workDir, 'catalog.json') }
    const plan = planLedger(orgId, options.orgs - 1)
    await createOrganizations(sql, plan)
    const postgres = await postgresInfo(sql)
    // The rollups grow with the rows, so the database's growth over the last step is what the next
    // one's rows will cost the disk (a little less: the rollups fill up).
    const [{ bytes: emptyBytes }] = await sql`SELECT pg_database_size(current_database())::bigint AS bytes`
    let databaseBytes = Number(emptyBytes)

    const steps: StepResult[] = []
    const notes: string[] = []
    let loaded = 0
    let bytesPerRow = firstBytesPerRowGuess
    for (const [index, target] of options.steps.entries()) {
      const adding = target - loaded
      const needed = adding * bytesPerRow * diskMargin
      const free = freeBytes(postgres.dataDirectory)
      if (free === null) console.error(`free disk space of the Postgres data directory unknown (${postgres.dataDirectory ?? 'not shown'}): not checked`)
      else if (needed > free) {
        notes.push(
          `The run stopped before the step to ${target.toLocaleString('en-US')} rows, as far as the disk allows: adding ${adding.toLocaleString('en-US')} rows needs about ${(needed / 1e9).toFixed(1)} GB (${Math.round(bytesPerRow)} bytes a row, ${loaded === 0 ? 'a first guess' : "the database's growth in the last step"}, x ${diskMargin}) and the Postgres data directory has ${free.toLocaleString('en-US')} bytes free.`,
        )
        console.error(notes.at(-1))
        break
      }
      const endMs = Date.now()
      await createMonthPartitions(sql, plan, endMs)
      console.error(`step ${index + 1} of ${options.steps.length}: adding ${adding.toLocaleString('en-US')} rows (to ${target.toLocaleString('en-US')}) ...`)
      const loadS = await loadStep({ databaseUrl: database.url, plan, step: index + 1, rows: adding, writers: options.writers, batchRows: options.batchRows, endMs, workDir, running: writers })
      loaded = target
      console.error(`  loaded in ${loadS.toFixed(1)} s; analyzing and measuring ...`)
      await analyzeLedger(sql)
      const sizes = await measureSizes(sql)
      bytesPerRow = (sizes.databaseBytes - databaseBytes) / adding
      databaseBytes = sizes.databaseBytes

      const gateway = await startLedgerGateway(launch)
      const nowS = Math.floor(Date.now() / 1000)
      const session = await signIn(gateway.baseUrl, tenant)
      const reports = await measureReports(gateway.baseUrl, session.headers, nowS)
      if (reports.reportedRequests === 0) throw new Error('the 30-day usage report counts no requests: it does not read the loaded history')
      const inRange = await rowsInRange(sql, orgId, nowS - measuredHistoryDays * 24 * 60 * 60)
      const rebuilt = await measureRebuild(gateway, launch, tenant.api_key)
      await rebuilt.gateway.stop()
      const reconcile = await measureReconcile(launch)
      if (!reconcile) console.error('redis-server is not installed: reconcile skipped')
      steps.push({ rows: target, loadS, rowsLoaded: adding, sizes, rowsInRange: inRange, reports, rebuild: rebuilt.timings, reconcile })
    }
    if (steps.some((step) => !step.reconcile)) notes.push('reconcile was not measured: redis-server is not installed.')

    const report: LedgerReport = {
      command: ['bun', 'bench/ledger.ts', ...Bun.argv.slice(2)].join(' '),
      date: new Date(),
      commit: gitCommit(),
      machine: readMachineInfo(repoDir),
      postgres,
      orgs: options.orgs,
      writers: options.writers,
      batchRows: options.batchRows,
      steps,
      notes,
    }
    const markdown = renderLedgerReport(report)
    console.log(markdown)
    if (options.outPath) {
      await Bun.write(options.outPath, markdown + '\n')
      console.error(`written to ${options.outPath}`)
    }
  } finally {
    await sql.close()
  }
}

if (import.meta.main) {
  const options = parseOptions(Bun.argv.slice(2))
  const workDir = mkdtempSync(join(tmpdir(), 'nilegate-bench-ledger-'))
  const processes = new ProcessGroup()
  const writers = new Set<Subprocess>()
  let database: { url: string; drop: (() => Promise<void>) | null } | null = null
  let keepLogs = false
  let isInterrupted = false
  let cleaning: Promise<void> | null = null
  // Once, whoever asks first (a signal or the end of the run); both wait for the database to go.
  const cleanup = () => (cleaning ??= cleanUp())
  const cleanUp = async () => {
    for (const writer of writers) writer.kill('SIGKILL')
    await processes.stopAll()
    await Promise.all([...writers].map((writer) => writer.exited))
    if (database?.drop && !options.keep) await database.drop().catch((error) => console.error(`dropping the scratch database: ${(error as Error).message}`))
    else if (database) console.error(`database kept: ${database.url}`)
    if (keepLogs) console.error(`logs: ${workDir} (kept)`)
    else rmSync(workDir, { recursive: true, force: true })
  }
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.on(signal, () => {
      isInterrupted = true
      void cleanup().finally(() => process.exit(code))
    })
  }
  process.on('exit', () => {
    processes.killAllNow()
    for (const writer of writers) writer.kill('SIGKILL')
  })

  let exitCode = 1
  const startedAt = performance.now()
  try {
    database = await openDatabase(options)
    await main(options, processes, workDir, database, writers)
    exitCode = 0
  } catch (error) {
    if (isInterrupted) console.error('bench interrupted')
    else {
      console.error(`bench failed: ${(error as Error).stack ?? error}`)
      keepLogs = true
    }
  } finally {
    await cleanup()
  }
  console.error(`took ${((performance.now() - startedAt) / 1000).toFixed(0)} s`)
  process.exit(exitCode)
}
