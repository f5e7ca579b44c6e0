/** Checks the dashboard's forms make before sending: the same rules the API applies, said plainly. */

/** An EGP amount field: empty means "none" when `optional`. */
export function egpAmountProblem(value: string, optional = true): string | undefined {
  const trimmed = value.trim()
  if (trimmed === '') return optional ? undefined : 'Enter an amount in EGP.'
  if (!/^\d{1,12}(\.\d{1,6})?$/.test(trimmed)) return 'Enter an amount in EGP such as 250 or 99.50 (up to 6 decimals).'
  return undefined
}

/** A whole number of requests per minute: empty means "none". */
export function rpmProblem(value: string): string | undefined {
  const trimmed = value.trim()
  if (trimmed === '') return undefined
  if (!/^\d+$/.test(trimmed) || Number(trimmed) < 1 || Number(trimmed) > 1_000_000_000) return 'Enter a whole number of requests per minute, 1 or more.'
  return undefined
}

/** Optional text to send: null when empty (clears the setting). */
export function orNull(value: string): string | null {
  const trimmed = value.trim()
  return trimmed === '' ? null : trimmed
}

/** A requests-per-minute field as the API takes it. */
export function rpmValue(value: string): number | null {
  const trimmed = value.trim()
  return trimmed === '' ? null : Number(trimmed)
}

/** The entries of a list typed one per line (or separated by commas). */
export function listEntries(value: string): string[] {
  return value
    .split(/[\n,]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
}

const ipv4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

/** Whether `entry` is an IPv4 or IPv6 address, or a CIDR of one. */
export function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/')
  if (extra !== undefined) return false
  const isV4 = ipv4.test(address)
  const isV6 = !isV4 && isIpv6(address)
  if (!isV4 && !isV6) return false
  if (prefix === undefined) return true
  if (!/^\d{1,3}$/.test(prefix)) return false
  return Number(prefix) <= (isV4 ? 32 : 128)
}

function isIpv6(address: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(address) || !address.includes(':')) return false
  try {
    // The URL parser knows IPv6 in every spelling, embedded IPv4 included.
    return new URL(`http://[${address}]/`).hostname.length > 2
  } catch {
    return false
  }
}

/** The first entry of an allow-list that is neither an address nor a CIDR, as a message. */
export function allowListProblem(value: string): string | undefined {
  const bad = listEntries(value).find((entry) => !isAddressOrCidr(entry))
  return bad === undefined ? undefined : `'${bad}' is not an IPv4 or IPv6 address or CIDR (like 203.0.113.0/24 or 2001:db8::/32).`
}
