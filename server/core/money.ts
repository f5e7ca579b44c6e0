/** Micro-EGP in one EGP. */
export const microsPerEgp = 1_000_000n
const tokensPerPriceUnit = 1_000_000n

/** Parses a decimal EGP string with up to 6 decimals ("12.5") into integer micro-EGP. */
export function parseEgp(decimal: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(decimal.trim())
  if (!match) throw new Error(`not an EGP amount with at most 6 decimals: ${JSON.stringify(decimal)}`)
  return BigInt(match[1]!) * microsPerEgp + BigInt((match[2] ?? '').padEnd(6, '0'))
}

/** Formats integer micro-EGP as a decimal EGP string with 6 decimals ("12.500000"). */
export function formatEgp(micros: bigint): string {
  const sign = micros < 0n ? '-' : ''
  const abs = micros < 0n ? -micros : micros
  return `${sign}${abs / microsPerEgp}.${(abs % microsPerEgp).toString().padStart(6, '0')}`
}

/** Micro-EGP as the API shows money, or null. */
export function formatEgpOrNull(micros: bigint | null): string | null {
  return micros === null ? null : formatEgp(micros)
}

/** Ceiling division of non-negative bigints. */
function divCeil(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b
}

/** Cost of a request in micro-EGP: ceil((prompt * inputPrice + completion * outputPrice) / 1M), prices in micro-EGP per 1M tokens. */
export function costMicros(promptTokens: number, completionTokens: number, inputPriceMicrosPerM: bigint, outputPriceMicrosPerM: bigint): bigint {
  return divCeil(BigInt(promptTokens) * inputPriceMicrosPerM + BigInt(completionTokens) * outputPriceMicrosPerM, tokensPerPriceUnit)
}

/** The catalog's monthly cost example: 50M input plus 15M output tokens. */
export function monthlyCostExampleMicros(inputPriceMicrosPerM: bigint, outputPriceMicrosPerM: bigint): bigint {
  return costMicros(50_000_000, 15_000_000, inputPriceMicrosPerM, outputPriceMicrosPerM)
}
