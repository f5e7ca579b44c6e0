import type { Usage } from '@nilegate/shared/schemas/common'

/** The most tokens one count may be: the ledger keeps counts as 32-bit integers. */
const maxTokenCount = 2_147_483_647

/** A count of tokens the gateway can bill and record: a non-negative integer the ledger can hold. */
export function isTokenCount(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= maxTokenCount
}

/**
 * An upstream's `usage` when its prompt and completion counts are token counts (its other fields,
 * such as `prompt_tokens_details`, kept for the client; a `total_tokens` that is not a count made
 * their sum); null otherwise, and the caller estimates. A fractional or negative count would fail
 * the cost's integer arithmetic or credit the organization, and one beyond 32 bits would fail the
 * insert of the usage rows it is batched with.
 */
export function reportedUsage(value: unknown): Usage | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null
  const usage = value as Record<string, unknown>
  if (!isTokenCount(usage.prompt_tokens) || !isTokenCount(usage.completion_tokens)) return null
  if (!isTokenCount(usage.total_tokens)) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens
  return usage as Usage
}
