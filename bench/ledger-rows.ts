// Synthetic usage rows for bench/ledger.ts: who they belong to, and their CSV in the column order
// of the COPY the bench sends (that of a gateway's batch).

const dayMs = 24 * 60 * 60 * 1000

/** The columns of usage_events the bench fills, in the order of its CSV. */
export const usageColumns = [
  'request_id', 'org_id', 'project_id', 'key_id', 'model', 'endpoint', 'stream', 'prompt_tokens', 'completion_tokens',
  'cost_micros', 'status', 'latency_ms', 'region', 'created_at', 'unbilled_prompt_tokens', 'unbilled_completion_tokens', 'unbilled_micros',
].join(', ')

export interface LedgerKey {
  id: string
  projectId: string
  models: readonly [string, string]
}

/** An organization of the synthetic history: its keys, and how far back its rows go. */
export interface LedgerOrg {
  id: string
  keys: LedgerKey[]
  historyMs: number
}

/** The measured organization and the others that share the table with it. */
export interface LedgerPlan {
  measured: LedgerOrg
  others: LedgerOrg[]
}

/** Every tenth row is the measured organization's. */
export const measuredShare = 0.1
/** The measured organization's rows cover these last days; the others' 300. */
export const measuredHistoryDays = 30
const othersHistoryDays = 300
const modelIds = ['bench/llama-70b', 'bench/qwen-32b', 'bench/mistral-24b', 'bench/gemma-27b']

/** The id of the bench's `index`th other organization (from 1): org_bench_0001, ... */
export function otherOrgId(index: number): string {
  return `org_bench_${String(index).padStart(4, '0')}`
}

/**
 * The measured organization (50 keys in 5 projects, each key on 2 of 4 models) and `otherCount`
 * others of 2 keys in one project, on 2 models.
 */
export function planLedger(measuredOrgId: string, otherCount: number): LedgerPlan {
  const measuredKeys = Array.from({ length: 50 }, (_, index): LedgerKey => ({
    id: `key_bench_m${String(index).padStart(2, '0')}`,
    projectId: `proj_bench_m${index % 5}`,
    models: [modelIds[index % 4]!, modelIds[(index + 1) % 4]!],
  }))
  const others = Array.from({ length: otherCount }, (_, offset): LedgerOrg => {
    const id = otherOrgId(offset + 1)
    const models = [modelIds[offset % 4]!, modelIds[(offset + 2) % 4]!] as const
    return { id, historyMs: othersHistoryDays * dayMs, keys: [1, 2].map((n) => ({ id: `${id.replace('org_', 'key_')}_${n}`, projectId: id.replace('org_', 'proj_'), models })) }
  })
  return { measured: { id: measuredOrgId, keys: measuredKeys, historyMs: measuredHistoryDays * dayMs }, others }
}

/** The first day of every UTC month from `fromMs` to `untilMs`, as YYYY-MM-01. */
export function monthsCovering(fromMs: number, untilMs: number): string[] {
  const months: string[] = []
  const at = new Date(fromMs)
  let year = at.getUTCFullYear()
  let month = at.getUTCMonth()
  while (Date.UTC(year, month, 1) <= untilMs) {
    months.push(`${year}-${String(month + 1).padStart(2, '0')}-01`)
    month++
    if (month === 12) {
      month = 0
      year++
    }
  }
  return months
}

/** The longest history of the plan: its partitions must reach this far back. */
export function oldestHistoryMs(plan: LedgerPlan): number {
  return Math.max(plan.measured.historyMs, ...plan.others.map((org) => org.historyMs))
}

/** mulberry32: a small deterministic generator, so every run writes the same rows. */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** One writer's part of one step. */
export interface WriterSlice {
  step: number
  writer: number
  writers: number
  rows: number
  /** The rows' history ends here (the step's start). */
  endMs: number
}

/**
 * The writer's rows as CSV, `batchRows` a batch. Each organization gets its share of every step,
 * spread evenly over its whole history: row i of n lies at i/n of it, so rows come in time order,
 * and every step adds to the history in the same shape. Writers start at different points of the
 * history (writer w of W at w/W, wrapping round), so that their batches seldom add to the same
 * rollup rows at once.
 */
export function* csvBatches(plan: LedgerPlan, slice: WriterSlice, batchRows: number): Generator<{ csv: string; rows: number }> {
  const random = randomFrom(slice.step * 7919 + slice.writer * 104729 + 1)
  const offset = slice.writer / slice.writers
  const prefix = `req_b${slice.step}w${slice.writer}_`
  const measuredEvery = Math.round(1 / measuredShare)
  let otherTurn = 0
  let lines: string[] = []
  for (let index = 0; index < slice.rows; index++) {
    const org = index % measuredEvery === 0 || plan.others.length === 0 ? plan.measured : plan.others[otherTurn++ % plan.others.length]!
    const share = ((index + random()) / slice.rows + offset) % 1
    const createdAt = new Date(slice.endMs - org.historyMs + share * org.historyMs).toISOString()
    lines.push(`${prefix}${index.toString(36)},${org.id},${usageFields(org, random)},${createdAt},0,0,0`)
    if (lines.length === batchRows) {
      yield { csv: lines.join('\n') + '\n', rows: lines.length }
      lines = []
    }
  }
  if (lines.length > 0) yield { csv: lines.join('\n') + '\n', rows: lines.length }
}

// Prices as the bench catalog's samples: 30 EGP a million prompt tokens, 90 a million completion tokens.
const promptMicrosPerToken = 30
const completionMicrosPerToken = 90

/** project_id .. latency_ms and region of one row: chat mostly, one row in ten an embedding. */
function usageFields(org: LedgerOrg, random: () => number): string {
  const key = org.keys[Math.floor(random() * org.keys.length)]!
  const model = key.models[random() < 0.5 ? 0 : 1]
  if (random() < 0.1) {
    const promptTokens = 8 + Math.floor(random() * 500)
    return `${key.projectId},${key.id},${model},embeddings,f,${promptTokens},0,${promptTokens * promptMicrosPerToken},200,${20 + Math.floor(random() * 200)},eg-cairo-1`
  }
  const skew = random()
  const promptTokens = 50 + Math.floor(skew * skew * 3000)
  const completionTokens = 1 + Math.floor(random() * 600)
  const costMicros = promptTokens * promptMicrosPerToken + completionTokens * completionMicrosPerToken
  const stream = random() < 0.4 ? 't' : 'f'
  return `${key.projectId},${key.id},${model},chat.completions,${stream},${promptTokens},${completionTokens},${costMicros},200,${80 + completionTokens * 8 + Math.floor(random() * 300)},eg-cairo-1`
}
