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

/**
 * Usage events, written as one INSERT per batch whatever its size: the batch travels as a single
 * JSON parameter (an array of row arrays) that `json_array_elements` turns into rows, so building
 * and parsing the statement costs the same for 1 row or 5,000 (a VALUES list costs per row on both
 * sides, which showed on the hot path). Replaying a batch inserts nothing twice.
 */
export function createUsageRepository(db: Drizzle): UsageRepository {
  return {
    async insertUsageEvents(events: UsageEvent[]): Promise<void> {
      if (events.length === 0) return
      const rows = JSON.stringify(events.map(toRow))
      await db.execute(sql`
        INSERT INTO usage_events (request_id, org_id, project_id, key_id, model, endpoint, stream, prompt_tokens,
          completion_tokens, cost_micros, status, latency_ms, region, created_at)
        SELECT r->>0, r->>1, r->>2, r->>3, r->>4, r->>5, (r->>6)::boolean, (r->>7)::integer, (r->>8)::integer,
          (r->>9)::bigint, (r->>10)::integer, (r->>11)::integer, r->>12, (r->>13)::timestamptz
        FROM json_array_elements(${rows}::json) AS r
        ON CONFLICT (request_id) DO NOTHING`)
    },
  }
}
