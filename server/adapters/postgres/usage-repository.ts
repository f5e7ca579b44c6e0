import { sql } from 'drizzle-orm'
import type { UsageEvent, UsageRepository } from '../../core/ports'
import type { Drizzle } from './drizzle'

/** One event as a JSON array, in the column order of the INSERT below; money travels as a string. */
function toRow(event: UsageEvent): unknown[] {
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
  ]
}

/** A batch of events as the single JSON parameter `insertUsageRows` takes. */
export function usageRowsJson(events: UsageEvent[]): string {
  return JSON.stringify(events.map(toRow))
}

/**
 * Writes a batch as one statement whatever its size: the batch travels as a single JSON parameter
 * (an array of row arrays, `usageRowsJson`) that `json_array_elements` turns into rows, so building
 * and parsing the statement costs the same for 1 row or 5,000 (a VALUES list costs per row on both
 * sides, which showed on the hot path). Replaying a batch inserts nothing twice. The same statement
 * moves each key's `last_used_at` to its newest new row, at most once a minute per key, so that
 * busy keys do not rewrite their row on every batch. The embedded database's thread is handed the
 * JSON text rather than the events: cloning a string across threads costs a fraction of cloning
 * thousands of objects.
 */
export async function insertUsageRows(db: Drizzle, rows: string): Promise<void> {
  await db.execute(sql`
    WITH inserted AS (
      INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens,
        completion_tokens, cost_micros, status, latency_ms, region, created_at)
      SELECT r->>0, r->>1, r->>2, r->>3, r->>4, r->>5, (r->>6)::boolean, (r->>7)::integer, (r->>8)::integer,
        (r->>9)::bigint, (r->>10)::integer, (r->>11)::integer, r->>12, (r->>13)::timestamptz
      FROM json_array_elements(${rows}::json) AS r
      ON CONFLICT (request_id) DO NOTHING
      RETURNING key_id, created_at),
    latest AS (SELECT key_id, max(created_at) AS used_at FROM inserted GROUP BY key_id)
    UPDATE api_keys SET last_used_at = latest.used_at FROM latest
    WHERE api_keys.id = latest.key_id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < latest.used_at - interval '1 minute')`)
}

export function createUsageRepository(db: Drizzle): UsageRepository {
  return {
    async insertUsageEvents(events: UsageEvent[]): Promise<void> {
      if (events.length > 0) await insertUsageRows(db, usageRowsJson(events))
    },
  }
}
