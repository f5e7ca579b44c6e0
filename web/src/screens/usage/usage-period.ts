import { dateInZone, startOfDayIn } from '../../lib/format'

/** The periods the overview charts. */
export const periods = [
  { id: '7d', label: 'Last 7 days, per day', width: '1d', days: 7 },
  { id: '30d', label: 'Last 30 days, per day', width: '1d', days: 30 },
  { id: '24h', label: 'Last 24 hours, per hour', width: '1h', hours: 24 },
  { id: '72h', label: 'Last 72 hours, per hour', width: '1h', hours: 72 },
] as const

export type PeriodId = (typeof periods)[number]['id']

/** Where a period starts (Unix seconds): midnight of its first day in `timeZone`, or the hour `hours` ago. */
export function periodStart(id: PeriodId, timeZone: string, nowMs = Date.now()): { start: number; width: '1d' | '1h' } {
  const period = periods.find((each) => each.id === id)!
  if ('days' in period) return { start: startOfDayIn(dateInZone(timeZone, period.days - 1, nowMs), timeZone), width: '1d' }
  return { start: Math.floor(nowMs / 3_600_000) * 3600 - (period.hours - 1) * 3600, width: '1h' }
}
