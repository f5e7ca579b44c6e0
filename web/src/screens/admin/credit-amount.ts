/** The amount of a credit top-up as an operator types it, checked and made exact before it is sent. */

/** The largest balance a store holds, in micro-EGP (2^53 - 1): a top-up above it cannot apply. */
const maxMicros = 9_007_199_254_740_991n
const microsPerEgp = 1_000_000n

/** Arabic-Indic and Eastern Arabic-Indic digits, and the Arabic decimal separator, as ASCII. */
function asciiDigits(text: string): string {
  return text.replace(/[\u0660-\u0669\u06f0-\u06f9\u066b]/g, (char) => {
    if (char === '\u066b') return '.'
    const code = char.charCodeAt(0)
    return String(code >= 0x06f0 ? code - 0x06f0 : code - 0x0660)
  })
}

/** A valid amount: the decimal string the API takes, and its micro-EGP. */
export interface CreditAmount {
  /** EGP as a decimal string without needless zeros ("250", "12.5"), sent as `amount_egp`. */
  decimal: string
  micros: bigint
}

/**
 * The amount typed in `input` (EGP, up to 6 decimals; spaces, thousands commas and Arabic digits
 * allowed), or the reason it cannot be sent. Only string arithmetic: 0.1 + 0.2 stays 0.3.
 */
export function parseCreditAmount(input: string): CreditAmount | { error: string } {
  const text = asciiDigits(input).replace(/[\s,\u066c]/g, '')
  if (text === '') return { error: 'Enter an amount in EGP.' }
  const match = /^(\d+)(?:\.(\d*))?$/.exec(text)
  if (!match) return { error: 'Enter a positive amount in EGP using digits and at most one decimal point, like 250 or 12.5.' }
  const fraction = (match[2] ?? '').replace(/0+$/, '')
  if (fraction.length > 6) return { error: 'Amounts have at most 6 decimals (1 micro-EGP).' }
  const micros = BigInt(match[1]!) * microsPerEgp + BigInt(fraction.padEnd(6, '0'))
  if (micros <= 0n) return { error: 'The amount must be above 0.' }
  if (micros > maxMicros) return { error: 'The amount is above the largest balance an organization can hold.' }
  const whole = (micros / microsPerEgp).toString()
  return { decimal: fraction === '' ? whole : `${whole}.${fraction}`, micros }
}
