/** Where monthly spend caps reset unless the organization chose another zone. */
export const defaultBillingTimeZone = 'Africa/Cairo'

interface ZoneMonth {
  format: Intl.DateTimeFormat
  /** The whole second (Unix) `month` was computed for. */
  second: number
  month: string
}

// One formatter per zone, and the last answer: a month changes at a local midnight, which falls on a
// whole UTC second (zone offsets are whole seconds), so every instant of one second shares a month.
const zones = new Map<string, ZoneMonth>()

/** The billing month (yyyymm) of `nowMs` in `timeZone`: months start at 00:00 on the 1st there. */
export function billingMonth(nowMs: number, timeZone: string = defaultBillingTimeZone): string {
  let zone = zones.get(timeZone)
  if (!zone) {
    const format = new Intl.DateTimeFormat('en-US', { timeZone, calendar: 'gregory', numberingSystem: 'latn', year: 'numeric', month: '2-digit' })
    zone = { format, second: Number.NaN, month: '' }
    zones.set(timeZone, zone)
  }
  const second = Math.floor(nowMs / 1000)
  if (second !== zone.second) {
    zone.month = formatMonth(zone.format, nowMs)
    zone.second = second
  }
  return zone.month
}

function formatMonth(format: Intl.DateTimeFormat, nowMs: number): string {
  if (!Number.isFinite(nowMs)) throw new RangeError(`not a time: ${nowMs}`)
  let year = ''
  let month = ''
  for (const part of format.formatToParts(nowMs)) {
    if (part.type === 'year') year = part.value
    else if (part.type === 'month') month = part.value
  }
  if (!/^\d{4}$/.test(year) || !/^\d{2}$/.test(month)) throw new RangeError(`no yyyymm month for ${new Date(nowMs).toISOString()}`)
  return year + month
}
