/**
 * Exact money for the screens that price tokens: EGP decimal strings as the API gives them, turned
 * into integer micro-EGP with string arithmetic (never a float), and back.
 */

const microsPerEgp = 1_000_000n
const tokensPerPriceUnit = 1_000_000n

/** A decimal EGP string with up to 6 decimals ("12.5") as integer micro-EGP; null when it is not one. */
export function egpToMicros(decimal: string): bigint | null {
  const match = /^(-?)(\d+)(?:\.(\d{1,6}))?$/.exec(decimal.trim())
  if (!match) return null
  const micros = BigInt(match[2]!) * microsPerEgp + BigInt((match[3] ?? '').padEnd(6, '0'))
  return match[1] === '-' ? -micros : micros
}

/** Integer micro-EGP as a decimal EGP string with 6 decimals ("12.500000"), the API's own form. */
export function microsToEgp(micros: bigint): string {
  const sign = micros < 0n ? '-' : ''
  const abs = micros < 0n ? -micros : micros
  return `${sign}${abs / microsPerEgp}.${(abs % microsPerEgp).toString().padStart(6, '0')}`
}

/** Token counts of one request. */
export interface TokenCounts {
  prompt_tokens: number
  completion_tokens: number
}

/** Prices of a model as the catalog gives them: EGP per 1,000,000 tokens. */
export interface TokenPrices {
  input_price_egp_per_1m: string
  output_price_egp_per_1m: string
}

/**
 * What `usage` costs at `prices`, in micro-EGP: ceil((prompt x input + completion x output) / 1M),
 * the gateway's own rule. Null when a price is not a decimal string.
 */
export function costMicros(usage: TokenCounts, prices: TokenPrices): bigint | null {
  const input = egpToMicros(prices.input_price_egp_per_1m)
  const output = egpToMicros(prices.output_price_egp_per_1m)
  if (input === null || output === null) return null
  const total = BigInt(usage.prompt_tokens) * input + BigInt(usage.completion_tokens) * output
  return (total + tokensPerPriceUnit - 1n) / tokensPerPriceUnit
}
