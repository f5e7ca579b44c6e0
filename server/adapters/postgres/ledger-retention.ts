import { existsSync, mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { sql } from 'drizzle-orm'
import { rowsOf, type Drizzle } from './drizzle'
import { listUsagePartitions, type UsagePartition } from './ledger-partitions'

/**
 * Retention of the ledger's raw rows (`bun server/cli.ts ledger retain`). A month's usage rows
 * leave with their partition (detached, then dropped, after an optional archive to a gzipped CSV
 * file); rows before the cutoff in the default partition, or in the partition of everything before
 * migration 0010, are deleted. Balances, month spends, caps and reports do not move: they read the
 * sums the insert triggers kept with the rows (usage_totals, usage_rollup_*), which stay. The
 * cutoff is recorded first (usage_retention), so that reports say from when raw rows exist.
 */

/** Writes the rows of `query` as CSV with a header, gzipped, to a new file at `path`. */
export type CopyOut = (query: string, path: string) => Promise<void>

export interface RetentionOptions {
  /** Unix ms of the start of a UTC month: raw rows created before it leave. */
  beforeMs: number
  /** Report what would leave, and change nothing. */
  dryRun: boolean
  /** A directory to archive the rows into before they leave; null for none. */
  archiveDir: string | null
}

export interface RetainedPart {
  partition: string
  /** `drop`: the whole partition leaves; `delete`: its rows before the cutoff do. */
  action: 'drop' | 'delete'
  rows: number
  /** The partition's bytes with indexes (what a drop gives back; a delete leaves it to VACUUM). */
  bytes: number
  /** The archive file, once written. */
  archive: string | null
}

export interface RetentionReport {
  beforeMs: number
  dryRun: boolean
  parts: RetainedPart[]
  /** From when raw rows are kept, after this run (or as it would be). */
  rawFromMs: number
}

export interface LedgerStatus {
  partitions: UsagePartition[]
  /** From when raw rows are kept; null when none were removed. */
  rawFromMs: number | null
}

/** The earliest month whose raw rows must stay: the one before the current (UTC). */
export function earliestRetainedMonthMs(nowMs: number): number {
  const now = new Date(nowMs)
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)
}

export class RetentionError extends Error {
  override name = 'RetentionError'
}

export async function ledgerStatus(db: Drizzle): Promise<LedgerStatus> {
  return { partitions: await listUsagePartitions(db), rawFromMs: await rawFrom(db) }
}

export async function retainUsage(db: Drizzle, copyOut: CopyOut, options: RetentionOptions, nowMs = Date.now()): Promise<RetentionReport> {
  const { beforeMs, dryRun } = options
  const cutoff = new Date(beforeMs)
  if (!Number.isFinite(beforeMs) || cutoff.getUTCDate() !== 1 || beforeMs % 86_400_000 !== 0) throw new RetentionError('the cutoff must be the start of a month (UTC)')
  // Rows of the last month may still arrive (a gateway that was cut off from the database keeps
  // them), and the current billing month of a zone ahead of UTC began in it.
  if (beforeMs > earliestRetainedMonthMs(nowMs)) {
    throw new RetentionError(`raw rows of the current and the previous month stay; the latest cutoff now is ${monthOf(earliestRetainedMonthMs(nowMs))}`)
  }
  const archiveDir = options.archiveDir === null ? null : resolve(options.archiveDir)
  const parts: RetainedPart[] = []
  for (const partition of await listUsagePartitions(db)) {
    const whole = !partition.isDefault && partition.untilMs !== null && partition.untilMs <= beforeMs
    const part = !whole && (partition.isDefault || partition.fromMs === null || partition.fromMs < beforeMs)
    if (!whole && !part) continue
    const rows = await countRows(db, partition.name, whole ? null : beforeMs)
    if (!whole && rows === 0) continue
    const file = archiveDir === null ? null : join(archiveDir, whole ? `${partition.name}.csv.gz` : `${partition.name}-before-${monthOf(beforeMs)}.csv.gz`)
    if (file !== null && existsSync(file)) throw new RetentionError(`${file} exists already; archive into another directory`)
    parts.push({ partition: partition.name, action: whole ? 'drop' : 'delete', rows, bytes: partition.bytes, archive: file })
  }
  const previous = await rawFrom(db)
  const rawFromMs = Math.max(previous ?? -Infinity, beforeMs)
  if (dryRun) return { beforeMs, dryRun, parts, rawFromMs }

  await db.execute(sql`
    INSERT INTO usage_retention (singleton, raw_from) VALUES (true, to_timestamp(${rawFromMs / 1000}))
    ON CONFLICT (singleton) DO UPDATE SET raw_from = GREATEST(usage_retention.raw_from, EXCLUDED.raw_from), updated_at = now()`)
  if (archiveDir !== null) mkdirSync(archiveDir, { recursive: true, mode: 0o700 })
  for (const part of parts) {
    const table = sql.identifier(part.partition)
    const before = `created_at < '${cutoff.toISOString()}'::timestamptz`
    if (part.archive !== null) await copyOut(`SELECT * FROM ${quoted(part.partition)}${part.action === 'delete' ? ` WHERE ${before}` : ''}`, part.archive)
    if (part.action === 'drop') {
      await detach(db, part.partition)
      await db.execute(sql`DROP TABLE ${table}`)
    } else {
      await db.transaction(async (tx) => {
        await tx.execute(sql`SET LOCAL nilegate.ledger_maintenance = 'on'`)
        await tx.execute(sql`DELETE FROM ${table} WHERE ${sql.raw(before)}`)
      })
    }
  }
  return { beforeMs, dryRun, parts, rawFromMs }
}

async function rawFrom(db: Drizzle): Promise<number | null> {
  const [row] = rowsOf<{ ms: string }>(await db.execute(sql`SELECT (extract(epoch FROM raw_from) * 1000)::bigint::text AS ms FROM usage_retention`))
  return row ? Number(row.ms) : null
}

async function countRows(db: Drizzle, partition: string, beforeMs: number | null): Promise<number> {
  const where = beforeMs === null ? sql`` : sql`WHERE created_at < to_timestamp(${beforeMs / 1000})`
  const [row] = rowsOf<{ rows: string }>(await db.execute(sql`SELECT count(*)::text AS rows FROM ${sql.identifier(partition)} ${where}`))
  return Number(row!.rows)
}

/**
 * Detaching locks usage_events for a moment, after the statements reading it end: with a lock
 * wait bounded, so that inserts queued behind the detach wait no longer than that, and tried again.
 */
async function detach(db: Drizzle, partition: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.transaction(async (tx) => {
        await tx.execute(sql`SET LOCAL lock_timeout = '2s'`)
        await tx.execute(sql`ALTER TABLE usage_events DETACH PARTITION ${sql.identifier(partition)}`)
      })
      return
    } catch (error) {
      const code = ((error as { cause?: { code?: string } }).cause ?? (error as { code?: string })).code
      if (code !== '55P03' || attempt >= 10) throw error
      await Bun.sleep(500 * attempt)
    }
  }
}

function quoted(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`
}

function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7)
}
