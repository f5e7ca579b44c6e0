// Loading bench/ledger.ts's synthetic history: the other organizations, the months' partitions, and
// the rows, through COPY into usage_events as a gateway's batches are (its statement trigger runs
// once a batch), by one psql process a writer.

import { join } from 'node:path'
import type { SQL, Subprocess } from 'bun'
import { csvBatches, monthsCovering, oldestHistoryMs, usageColumns, type LedgerPlan, type WriterSlice } from './ledger-rows'

// Credit enough that no synthetic history runs a balance out: 10^9 EGP.
const benchCreditMicros = '1000000000000000'

/**
 * Adds the plan's other organizations with a large credit each, and a large credit to the measured
 * one; on a database of an earlier run (--database-url) those already there are kept as they are.
 */
export async function createOrganizations(sql: SQL, plan: LedgerPlan): Promise<void> {
  const organizations = plan.others.map((org) => ({ id: org.id, name: `Bench ${org.id.slice(-4)}`, plan_tier: 'enterprise', balance_micros: benchCreditMicros }))
  for (let start = 0; start < organizations.length; start += 500) {
    await sql`INSERT INTO organizations ${sql(organizations.slice(start, start + 500))} ON CONFLICT (id) DO NOTHING`
  }
  const credits = [plan.measured, ...plan.others].map((org) => ({ id: `ctx_bench_${org.id}`, org_id: org.id, amount_micros: benchCreditMicros, kind: 'top_up', note: 'bench/ledger.ts credit' }))
  for (let start = 0; start < credits.length; start += 500) {
    await sql`INSERT INTO credit_transactions ${sql(credits.slice(start, start + 500))} ON CONFLICT (id) DO NOTHING`
  }
  await sql`UPDATE organizations SET balance_micros = balance_micros + ${benchCreditMicros}::bigint WHERE id = ${plan.measured.id}`
}

/** Creates the partition of every UTC month the history up to `endMs` covers; returns how many were new. */
export async function createMonthPartitions(sql: SQL, plan: LedgerPlan, endMs: number): Promise<number> {
  let created = 0
  for (const month of monthsCovering(endMs - oldestHistoryMs(plan), endMs)) {
    const [row] = await sql`SELECT nilegate_create_usage_month(${month}::date) AS created`
    if (row.created) created++
  }
  return created
}

export interface LoadStep {
  databaseUrl: string
  plan: LedgerPlan
  step: number
  rows: number
  writers: number
  batchRows: number
  endMs: number
  workDir: string
  /** Holds the psql processes while they run, for the caller to end them on failure. */
  running: Set<Subprocess>
}

/** Writes the step's rows with `writers` psql processes at once; resolves with the wall time in seconds. */
export async function loadStep(load: LoadStep): Promise<number> {
  const startedAt = performance.now()
  let sent = 0
  let reportedAt = startedAt
  const progress = (rows: number) => {
    sent += rows
    const now = performance.now()
    if (now - reportedAt < 10_000) return
    reportedAt = now
    console.error(`  ${sent.toLocaleString('en-US')} of ${load.rows.toLocaleString('en-US')} rows sent, ${Math.round(sent / ((now - startedAt) / 1000)).toLocaleString('en-US')} rows/s`)
  }
  const slices = Array.from({ length: load.writers }, (_, writer): WriterSlice => ({
    step: load.step,
    writer,
    writers: load.writers,
    rows: Math.floor(load.rows / load.writers) + (writer < load.rows % load.writers ? 1 : 0),
    endMs: load.endMs,
  }))
  await Promise.all(slices.filter((slice) => slice.rows > 0).map((slice) => writeSlice(load, slice, progress)))
  return (performance.now() - startedAt) / 1000
}

async function writeSlice(load: LoadStep, slice: WriterSlice, progress: (rows: number) => void): Promise<void> {
  const errorLogPath = join(load.workDir, `psql-step${load.step}-writer${slice.writer}.err`)
  // Commands and data on one stream: each COPY reads the rows after it, up to its `\.`.
  const child = Bun.spawn(['psql', load.databaseUrl, '-X', '-q', '-v', 'ON_ERROR_STOP=1'], {
    stdin: 'pipe',
    stdout: Bun.file(join(load.workDir, `psql-step${load.step}-writer${slice.writer}.out`)),
    stderr: Bun.file(errorLogPath),
  })
  load.running.add(child)
  const copy = `COPY usage_events (${usageColumns}) FROM STDIN WITH (FORMAT csv);\n`
  try {
    for (const batch of csvBatches(load.plan, slice, load.batchRows)) {
      if (child.exitCode !== null) break
      child.stdin.write(copy + batch.csv + '\\.\n')
      // Waits while psql is behind, so no more than a batch or two is held here.
      await child.stdin.flush()
      progress(batch.rows)
    }
    await child.stdin.end()
  } catch (error) {
    if (child.exitCode === null) throw error
    // psql ended first: its exit code and error log below say why.
  }
  const code = await child.exited
  load.running.delete(child)
  if (code !== 0) throw new Error(`psql (writer ${slice.writer} of step ${load.step}) exited with ${code}: ${(await Bun.file(errorLogPath).text()).slice(-2000)}`)
}
