import type { Usage } from '@nilegate/shared/schemas/common'

// What the gateway requires of an upstream's answers before it relays, bills or records them.

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Whether each choice of a completion (`part` is `message`) or of a chunk (`delta`) is an object
 * whose `part` is an object, with tool calls that are a list of objects when present: what clients
 * and the gateway's own relay read. A chunk's choice may lack its delta (the caller gives it an
 * empty one).
 */
export function hasChoices(choices: unknown[], part: 'message' | 'delta'): boolean {
  for (const choice of choices) {
    if (!isRecord(choice)) return false
    const content = choice[part]
    if (part === 'delta' && content == null) continue
    if (!isRecord(content)) return false
    const toolCalls = content.tool_calls
    if (toolCalls != null && !(Array.isArray(toolCalls) && toolCalls.every(isRecord))) return false
  }
  return true
}

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
  if (!isRecord(value)) return null
  if (!isTokenCount(value.prompt_tokens) || !isTokenCount(value.completion_tokens)) return null
  if (!isTokenCount(value.total_tokens)) value.total_tokens = value.prompt_tokens + value.completion_tokens
  return value as Usage
}
