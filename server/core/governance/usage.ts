/** Widths of usage buckets; days and hours start at midnight and on the hour in the organization's billing time zone. */
export type BucketWidth = '1d' | '1h'
export type UsageGroupField = 'project_id' | 'api_key_id' | 'model'

export interface UsageQuery {
  orgId: string
  timeZone: string
  /** Unix seconds: the first bucket is the one holding `startTime`; `endTime` is exclusive. */
  startTime: number
  endTime: number
  bucketWidth: BucketWidth
  /** At most this many buckets, from the first. */
  limit: number
  groupBy: UsageGroupField[]
  endpoint: 'chat.completions' | 'embeddings' | null
  projectIds: string[] | null
  apiKeyIds: string[] | null
  models: string[] | null
}

/** Totals of one group in one bucket; a field not grouped by is null. */
export interface UsageTotals {
  projectId: string | null
  apiKeyId: string | null
  model: string | null
  inputTokens: number
  outputTokens: number
  requests: number
  costMicros: bigint
}

export interface UsageBucket {
  /** Unix seconds. */
  startTime: number
  endTime: number
  results: UsageTotals[]
}

/** Month-to-date spend with the caps it counts against. */
export interface SpendLine {
  id: string
  name: string
  projectId: string | null
  spendMicros: bigint
  capMicros: bigint | null
}

export interface SpendSummary {
  projects: SpendLine[]
  apiKeys: SpendLine[]
}

export interface UsageReportStore {
  /**
   * Buckets from the one holding `startTime`, empty ones included; `hasMore` when buckets remain
   * before `endTime`; `rawFrom` (Unix seconds) from when raw usage rows are kept, null when none
   * were removed.
   */
  usageBuckets(query: UsageQuery): Promise<{ buckets: UsageBucket[]; hasMore: boolean; rawFrom: number | null }>
  /** Names and caps of the organization's projects and keys (optionally one project's), with the given month-to-date spends. */
  spendSummary(orgId: string, projectId: string | null, spends: { projects: Map<string, bigint>; keys: Map<string, bigint> }): Promise<SpendSummary>
}
