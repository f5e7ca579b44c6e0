import type { Locator } from 'playwright-core'

const numberPattern = /\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?/g

/** `"12.345678"` (the API's decimal EGP) as integer micro-EGP. */
function micros(decimal: string): bigint {
  const [whole, fraction = ''] = decimal.replace(/,/g, '').split('.')
  return BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6))
}

/**
 * Waits until `locator` shows the API's amount `egp` at whatever precision the screen rounds to:
 * a number shown with d >= 2 decimals counts when it is `egp` rounded to d decimals (en-US digits).
 * Whole numbers are not compared: a nearby round figure (a credit, a cap) would pass for the amount.
 */
export async function expectShowsAmount(locator: Locator, egp: string, timeoutMs = 10_000): Promise<void> {
  const target = micros(egp)
  const deadline = performance.now() + timeoutMs
  let text = ''
  while (performance.now() < deadline) {
    text = (await locator.textContent().catch(() => null)) ?? ''
    for (const shown of text.match(numberPattern) ?? []) {
      const decimals = shown.split('.')[1]?.length ?? 0
      if (decimals < 2) continue
      const halfStep = decimals >= 6 ? 0n : 5n * 10n ** BigInt(5 - decimals)
      const difference = micros(shown) - target
      if (difference <= halfStep && difference >= -halfStep) return
    }
    await Bun.sleep(100)
  }
  throw new Error(`expected ${egp} EGP (at any rounding) in ${locator}, which shows: ${JSON.stringify(text.trim().slice(0, 500))}`)
}
