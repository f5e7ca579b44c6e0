import type { UsageEvent, UsageRepository } from '../../core/ports'
import type { Drizzle } from './drizzle'
import { usageEvents } from './schema'

// 14 columns per row; Postgres allows 65,535 bind parameters per statement.
const maxRowsPerInsert = 4_000

/** Usage events, written as multi-row inserts; replaying a batch inserts nothing twice. */
export function createUsageRepository(db: Drizzle): UsageRepository {
  return {
    async insertUsageEvents(events: UsageEvent[]): Promise<void> {
      for (let start = 0; start < events.length; start += maxRowsPerInsert) {
        const rows = events.slice(start, start + maxRowsPerInsert).map(toRow)
        await db.insert(usageEvents).values(rows).onConflictDoNothing({ target: usageEvents.requestId })
      }
    },
  }
}

function toRow(event: UsageEvent): typeof usageEvents.$inferInsert {
  return {
    requestId: event.requestId,
    orgId: event.orgId,
    projectId: event.projectId,
    keyId: event.keyId,
    model: event.model,
    endpoint: event.endpoint,
    stream: event.stream,
    promptTokens: event.promptTokens,
    completionTokens: event.completionTokens,
    costMicros: event.costMicros,
    status: event.status,
    latencyMs: event.latencyMs,
    region: event.region,
    createdAt: event.createdAt,
  }
}
