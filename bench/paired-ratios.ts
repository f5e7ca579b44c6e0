import { percentile } from './percentile'

/**
 * One side's figure over the other's, pair by pair, and the median of those ratios, as
 * "x0.970 (0.950, 0.980, ...)"; pairs where either figure is missing, or the first is not
 * positive, are left out; "-" when none is left.
 */
export function pairedRatios(pairs: ReadonlyArray<readonly [base: number | null, head: number | null]>): string {
  const ratios: number[] = []
  for (const [base, head] of pairs) if (base !== null && head !== null && base > 0) ratios.push(head / base)
  if (ratios.length === 0) return '-'
  return `x${percentile([...ratios].sort((a, b) => a - b), 50).toFixed(3)} (${ratios.map((ratio) => ratio.toFixed(3)).join(', ')})`
}
