import type { PGlite, Transaction } from '@electric-sql/pglite'
import { sql } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import type { UsageEvent, UsageRepository } from '../../core/ports'
import type { Drizzle } from './drizzle'

/**
 * A batch of usage events as text, so that it crosses to the embedded database's thread as two
 * strings instead of thousands of cloned objects: the rows as CSV in the column order of
 * `usageColumns`, and each key's newest event as JSON `[[keyId, iso], ...]`.
 */
export interface UsageBatch {
  csv: string
  lastUsed: string
}

const usageColumns =
  '(request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens, completion_tokens, cost_micros, status, latency_ms, region, created_at, unbilled_prompt_tokens, unbilled_completion_tokens, unbilled_micros)'

// The inside of a quoted CSV field. Every text field is quoted, so commas, quotes and newlines in
// a model id cannot shift columns, and an empty string stays distinct from NULL (an unquoted empty
// field). Built on the hot path's thread for every request: a template, not an array join.
function inQuotes(text: string): string {
  return text.includes('"') ? text.replaceAll('"', '""') : text
}

function csvLine(event: UsageEvent): string {
  const region = event.region === null ? '' : `"${inQuotes(event.region)}"`
  const unbilled = event.unbilled ? `${event.unbilled.promptTokens},${event.unbilled.completionTokens},${event.unbilled.micros}` : '0,0,0'
  return `"${inQuotes(event.requestId)}","${inQuotes(event.orgId)}","${inQuotes(event.projectId)}","${inQuotes(event.keyId)}","${inQuotes(event.model)}","${event.endpoint}",${event.stream ? 't' : 'f'},${event.promptTokens},${event.completionTokens},${event.costMicros},${event.status},${event.latencyMs},${region},${event.createdAt.toISOString()},${unbilled}\n`
}

export async function usageBatch(events: UsageEvent[], lastUsed: KeyLastUsed[]): Promise<UsageBatch> {
  return { csv: await encodeInSlices(events, csvLine, ''), lastUsed: lastUsedJson(lastUsed) }
}

const rowsPerSlice = 500

/**
 * The events encoded and joined, a slice at a time with the event loop let in between: encoded at
 * once, a batch of 5,000 rows held every response on this thread for 5-7 ms.
 */
async function encodeInSlices(events: UsageEvent[], encode: (event: UsageEvent) => string, separator: string): Promise<string> {
  const slices: string[] = []
  for (let start = 0; start < events.length; start += rowsPerSlice) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve))
    slices.push(events.slice(start, start + rowsPerSlice).map(encode).join(separator))
  }
  return slices.join(separator)
}

/** A key and the time of its newest usage event in a batch. */
export type KeyLastUsed = readonly [keyId: string, usedAt: Date]

function lastUsedJson(lastUsed: KeyLastUsed[]): string {
  return JSON.stringify(lastUsed.map(([keyId, at]) => [keyId, at.toISOString()]))
}

const lastUsedStepMs = 60_000

/**
 * Which keys a batch should move `last_used_at` for: the database moves it at most once a minute
 * per key, and this process remembers what it wrote, so that a busy key does not cost an UPDATE
 * lookup on every batch (a third of what a row of usage costs to write in PGlite).
 */
export class LastUsedWrites {
  // keyId -> the last_used_at this process wrote, in ms.
  private readonly written = new Map<string, number>()
  private sweptAtMs = 0

  /** Each key's newest event in `events`, unless this process wrote a time less than a minute older. */
  due(events: UsageEvent[]): KeyLastUsed[] {
    const newest = new Map<string, Date>()
    for (const event of events) {
      const seen = newest.get(event.keyId)
      if (!seen || seen < event.createdAt) newest.set(event.keyId, event.createdAt)
    }
    const due: KeyLastUsed[] = []
    for (const [keyId, at] of newest) {
      const wrote = this.written.get(keyId)
      if (wrote === undefined || wrote < at.getTime() - lastUsedStepMs) due.push([keyId, at])
    }
    return due
  }

  /** After a batch committed: its keys need no write again for a minute of their events. */
  wrote(lastUsed: KeyLastUsed[], nowMs = Date.now()): void {
    for (const [keyId, at] of lastUsed) this.written.set(keyId, Math.max(this.written.get(keyId) ?? 0, at.getTime()))
    // Entries more than a minute old no longer hold anything back; keep the map to the active keys.
    if (nowMs - this.sweptAtMs < lastUsedStepMs) return
    this.sweptAtMs = nowMs
    for (const [keyId, wroteMs] of this.written) if (wroteMs < nowMs - lastUsedStepMs) this.written.delete(keyId)
  }
}

// Moves each key's last_used_at to the time given for it (a JSON array of [keyId, iso]), at most
// once a minute per key, so that busy keys do not rewrite their row on every batch.
const touchKeys = (lastUsed: string) => sql`
  UPDATE api_keys SET last_used_at = latest.used_at
  FROM (SELECT e->>0 AS key_id, (e->>1)::timestamptz AS used_at FROM jsonb_array_elements(${lastUsed}::jsonb) AS e) AS latest
  WHERE api_keys.id = latest.key_id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < latest.used_at - interval '1 minute')`

const dialect = new PgDialect()

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown })?.code === '23505'
}

async function touch(tx: Transaction, lastUsed: string) {
  if (lastUsed === '[]') return
  const query = dialect.sqlToQuery(touchKeys(lastUsed))
  await tx.query(query.sql, query.params)
}

function copyCsv(tx: Transaction, table: string, csv: string) {
  return tx.query(`COPY ${table} ${usageColumns} FROM '/dev/blob' WITH (FORMAT csv)`, [], { blob: new Blob([csv]) })
}

/**
 * The embedded database writes a batch with COPY, which costs a third of an INSERT ... SELECT per
 * row in PGlite, where the writes share the gateway's cores. COPY cannot skip rows that already
 * exist, so a batch that repeats a request (a write retried after it committed) goes through a
 * scratch table and `ON CONFLICT DO NOTHING` instead: replaying inserts nothing twice. A request's
 * row is keyed by its organization, id and start, which every write of it repeats.
 */
export async function copyUsageBatch(client: PGlite, batch: UsageBatch): Promise<void> {
  try {
    await client.transaction(async (tx) => {
      await copyCsv(tx, 'usage_events', batch.csv)
      await touch(tx, batch.lastUsed)
    })
  } catch (error) {
    if (!isUniqueViolation(error)) throw error
    await client.transaction(async (tx) => {
      await tx.query('CREATE TEMP TABLE usage_events_replay (LIKE usage_events) ON COMMIT DROP')
      await copyCsv(tx, 'usage_events_replay', batch.csv)
      await tx.query(`INSERT INTO usage_events ${usageColumns} SELECT ${usageColumns.slice(1, -1)} FROM usage_events_replay ON CONFLICT (org_id, request_id, created_at) DO NOTHING`)
      await touch(tx, batch.lastUsed)
    })
  }
}

/** One event as a JSON array, in the column order of the INSERT below; money travels as a string. */
function jsonRow(event: UsageEvent): unknown[] {
  return [
    event.requestId,
    event.orgId,
    event.projectId,
    event.keyId,
    event.model,
    event.endpoint,
    event.stream,
    event.promptTokens,
    event.completionTokens,
    event.costMicros.toString(),
    event.status,
    event.latencyMs,
    event.region,
    event.createdAt.toISOString(),
    event.unbilled?.promptTokens ?? 0,
    event.unbilled?.completionTokens ?? 0,
    (event.unbilled?.micros ?? 0n).toString(),
  ]
}

/**
 * Postgres takes a batch as one statement whatever its size: a single JSON parameter (an array of
 * row arrays) that `jsonb_array_elements` turns into rows, so building and parsing the statement
 * costs the same for 1 row or 5,000. jsonb, not json: `->>` on json parses the row's text again
 * for each of the 17 fields, which doubled the server's time per row. Replaying a batch inserts
 * nothing twice. (COPY through postgres.js never settles when the server rejects the data, so it
 * is not used here.)
 */
export async function insertUsageRows(db: Drizzle, events: UsageEvent[], lastUsed: KeyLastUsed[]): Promise<void> {
  const rows = `[${await encodeInSlices(events, (event) => JSON.stringify(jsonRow(event)), ',')}]`
  const insert = sql`
    INSERT INTO usage_events ${sql.raw(usageColumns)}
    SELECT r->>0, r->>1, r->>2, r->>3, r->>4, r->>5, (r->>6)::boolean, (r->>7)::integer, (r->>8)::integer,
      (r->>9)::bigint, (r->>10)::integer, (r->>11)::integer, r->>12, (r->>13)::timestamptz,
      (r->>14)::integer, (r->>15)::integer, (r->>16)::bigint
    FROM jsonb_array_elements(${rows}::jsonb) AS r
    ON CONFLICT (org_id, request_id, created_at) DO NOTHING`
  // A data-modifying WITH runs to completion whether or not the statement reads it.
  await db.execute(lastUsed.length === 0 ? insert : sql`WITH inserted AS (${insert}) ${touchKeys(lastUsedJson(lastUsed))}`)
}

/** Writes a batch of usage rows and moves the given keys' last use, in one transaction. */
export type UsageWriter = (events: UsageEvent[], lastUsed: KeyLastUsed[]) => Promise<void>

export function createUsageRepository(write: UsageWriter): UsageRepository {
  const lastUsedWrites = new LastUsedWrites()
  return {
    async insertUsageEvents(events: UsageEvent[]): Promise<void> {
      if (events.length === 0) return
      const lastUsed = lastUsedWrites.due(events)
      await write(events, lastUsed)
      lastUsedWrites.wrote(lastUsed)
    },
  }
}
