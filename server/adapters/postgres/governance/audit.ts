import type { AuditStore } from '../../../core/governance/audit'
import type { Drizzle } from '../drizzle'

export function createAuditRepository(_db: Drizzle): AuditStore {
  return {
    async listAuditLogs() {
      throw new Error('not built yet')
    },
  }
}
