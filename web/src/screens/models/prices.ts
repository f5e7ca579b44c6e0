/** What tokens cost at a model's catalog prices, in exact integer micro-EGP (never a float). */

import { egpToMicros } from '../../lib/format'

const tokensPerPriceUnit = 1_000_000n

/** Token counts of one request. */
export interface TokenCounts {
  prompt_tokens: number
  completion_tokens: number
}

/** Prices of a model as the catalog gives them: EGP per 1,000,000 tokens, as decimal strings. */
export interface TokenPrices {
  input_price_egp_per_1m: string
  output_price_egp_per_1m: string
}

/**
 * What `usage` costs at `prices`, in micro-EGP: ceil((prompt x input + completion x output) / 1M),
 * the gateway's own rule. Null when a price is not a decimal EGP string.
 */
export function costMicros(usage: TokenCounts, prices: TokenPrices): bigint | null {
  let input: bigint
  let output: bigint
  try {
    input = egpToMicros(prices.input_price_egp_per_1m)
    output = egpToMicros(prices.output_price_egp_per_1m)
  } catch {
    return null
  }
  const total = BigInt(usage.prompt_tokens) * input + BigInt(usage.completion_tokens) * output
  return (total + tokensPerPriceUnit - 1n) / tokensPerPriceUnit
}
