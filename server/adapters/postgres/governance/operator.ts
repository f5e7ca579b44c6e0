import type { OperatorStore } from '../../../core/governance/operator'
import type { Drizzle } from '../drizzle'

export function createOperatorRepository(_db: Drizzle): OperatorStore {
  return {}
}
