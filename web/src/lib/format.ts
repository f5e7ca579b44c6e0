/**
 * Numbers, money and dates as the person's browser locale writes them. Money arrives as exact
 * decimal EGP strings ("12.345678"): it is formatted from the string (never through a float) and
 * added up as integer micro-EGP.
 */

const microsPerEgp = 1_000_000n

/** Micro-EGP from an EGP decimal string ("12.345678" -> 12345678n); exact. */
export function egpToMicros(egp: string): bigint {
  const match = /^(-?)(\d+)(?:\.(\d{1,6}))?$/.exec(egp.trim())
  if (match === null) throw new RangeError(`'${egp}' is not an EGP amount.`)
  const [, sign, whole, fraction = ''] = match
  const micros = BigInt(whole!) * microsPerEgp + BigInt(fraction.padEnd(6, '0'))
  return sign === '-' ? -micros : micros
}

/** An EGP decimal string with 6 decimals from micro-EGP (12345678n -> "12.345678"). */
export function microsToEgp(micros: bigint): string {
  const sign = micros < 0n ? '-' : ''
  const magnitude = micros < 0n ? -micros : micros
  return `${sign}${magnitude / microsPerEgp}.${(magnitude % microsPerEgp).toString().padStart(6, '0')}`
}

/** An EGP amount as a person types it: "250.000000" -> "250", "99.500000" -> "99.5". */
export function plainEgp(egp: string | null | undefined): string {
  if (egp === null || egp === undefined) return ''
  return egp.includes('.') ? egp.replace(/0+$/, '').replace(/\.$/, '') : egp
}

const egpFormats = new Map<string, Intl.NumberFormat>()

function egpFormat(minimumFractionDigits: number, maximumFractionDigits: number): Intl.NumberFormat {
  const key = `${minimumFractionDigits}-${maximumFractionDigits}`
  let format = egpFormats.get(key)
  if (format === undefined) {
    format = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'EGP', minimumFractionDigits, maximumFractionDigits })
    egpFormats.set(key, format)
  }
  return format
}

/**
 * An EGP amount for display: "EGP 1,234.50". Amounts under one pound keep their micro-EGP digits
 * ("EGP 0.006123") so that the small spend of a few requests does not read as zero or a rounded
 * piastre; `exact` keeps them always.
 */
export function formatEgp(egp: string | null | undefined, options: { exact?: boolean } = {}): string {
  if (egp === null || egp === undefined) return '—'
  const micros = egpToMicros(egp)
  const magnitude = micros < 0n ? -micros : micros
  const precise = options.exact === true || (magnitude > 0n && magnitude < microsPerEgp)
  // Intl formats a decimal string exactly, digit for digit.
  return egpFormat(2, precise ? 6 : 2).format(microsToEgp(micros) as Intl.StringNumericLiteral)
}

/** `part` as a share of `whole` in percent, for a gauge (display only); null when there is no whole. */
export function sharePercent(part: string, whole: string | null | undefined): number | null {
  if (whole === null || whole === undefined) return null
  const wholeMicros = egpToMicros(whole)
  if (wholeMicros <= 0n) return 100
  return Number((egpToMicros(part) * 10_000n) / wholeMicros) / 100
}

/** An EGP amount as a number of pounds, for charts only: never for arithmetic on money. */
export function egpForChart(egp: string): number {
  return Number(egpToMicros(egp)) / 1_000_000
}

const integerFormat = new Intl.NumberFormat()
const compactFormat = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 })

/** A count (tokens, requests) with the locale's grouping: "1,234,567". */
export function formatCount(count: number | null | undefined): string {
  return count === null || count === undefined ? '—' : integerFormat.format(count)
}

/** A count in short form for chart axes: "1.2M". */
export function formatCompact(count: number): string {
  return compactFormat.format(count)
}

const dateFormats = new Map<string, Intl.DateTimeFormat>()

/** A date format of the browser's locale, or (`forReading`) one whose digits code can read back. */
function dateFormat(timeZone: string, options: Intl.DateTimeFormatOptions, forReading = false): Intl.DateTimeFormat {
  const key = `${timeZone}|${forReading}|${JSON.stringify(options)}`
  let format = dateFormats.get(key)
  if (format === undefined) {
    format = new Intl.DateTimeFormat(forReading ? 'en-US' : undefined, { ...options, timeZone })
    dateFormats.set(key, format)
  }
  return format
}

/** A moment (Unix seconds) as date and time in `timeZone`: "12 Mar 2026, 14:05". */
export function formatDateTime(unixSeconds: number | null | undefined, timeZone: string): string {
  if (unixSeconds === null || unixSeconds === undefined) return '—'
  return dateFormat(timeZone, { dateStyle: 'medium', timeStyle: 'short' }).format(unixSeconds * 1000)
}

/** A day (Unix seconds of any moment in it) in `timeZone`: "12 Mar 2026". */
export function formatDate(unixSeconds: number | null | undefined, timeZone: string): string {
  if (unixSeconds === null || unixSeconds === undefined) return '—'
  return dateFormat(timeZone, { dateStyle: 'medium' }).format(unixSeconds * 1000)
}

/** A usage bucket's start in `timeZone`: the day for daily buckets, day and hour for hourly ones. */
export function formatBucket(unixSeconds: number, width: '1d' | '1h', timeZone: string): string {
  return width === '1d'
    ? dateFormat(timeZone, { month: 'short', day: 'numeric' }).format(unixSeconds * 1000)
    : dateFormat(timeZone, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }).format(unixSeconds * 1000)
}

/** The time zone's name as people read it: "Africa/Cairo (GMT+2)". */
export function describeTimeZone(timeZone: string, at = Date.now()): string {
  const offset = dateFormat(timeZone, { timeZoneName: 'shortOffset' })
    .formatToParts(at)
    .find((part) => part.type === 'timeZoneName')?.value
  return offset ? `${timeZone} (${offset})` : timeZone
}

/**
 * The Unix seconds of midnight starting the day `date` (YYYY-MM-DD) in `timeZone`: what a date
 * field means in the organization's billing time zone.
 */
export function startOfDayIn(date: string, timeZone: string): number {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number]
  const guess = Date.UTC(year, month - 1, day)
  // The zone's offset at that moment, read back from how the zone writes it; twice, across a DST change.
  let moment = guess
  for (let i = 0; i < 2; i++) moment = guess - zoneOffsetMs(moment, timeZone)
  return Math.floor(moment / 1000)
}

function zoneOffsetMs(atMs: number, timeZone: string): number {
  const parts = dateFormat(timeZone, { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }, true).formatToParts(atMs)
  const value = (type: string) => Number(parts.find((part) => part.type === type)?.value)
  const asUtc = Date.UTC(value('year'), value('month') - 1, value('day'), value('hour'), value('minute'), value('second'))
  return asUtc - Math.floor(atMs / 1000) * 1000
}

/** Today's date (YYYY-MM-DD) in `timeZone`, `daysAgo` days back. */
export function dateInZone(timeZone: string, daysAgo = 0, now = Date.now()): string {
  const parts = dateFormat(timeZone, { year: 'numeric', month: '2-digit', day: '2-digit' }, true).formatToParts(now - daysAgo * 86_400_000)
  const value = (type: string) => parts.find((part) => part.type === type)?.value ?? ''
  return `${value('year')}-${value('month')}-${value('day')}`
}

/** The browser's own time zone: for what concerns the person rather than the organization (sessions). */
export const localTimeZone = Intl.DateTimeFormat().resolvedOptions().timeZone

/** A billing month ("2026-11") as people say it: "November 2026". */
export function formatMonth(month: string): string {
  const [year, number] = month.split('-').map(Number) as [number, number]
  return new Intl.DateTimeFormat(undefined, { month: 'long', year: 'numeric', timeZone: 'UTC' }).format(Date.UTC(year, number - 1, 15))
}

/** The day after `date` (YYYY-MM-DD), for ranges whose last day is included. */
export function nextDate(date: string): string {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number]
  return new Date(Date.UTC(year, month - 1, day + 1)).toISOString().slice(0, 10)
}
