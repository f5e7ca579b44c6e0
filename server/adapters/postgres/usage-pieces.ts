/**
 * Which rows of the usage rollups, and of the raw usage rows, make up each bucket of a usage
 * report exactly (migration 0010): a whole local day from the day rollups where they are whole for
 * the zone; otherwise the bucket's whole UTC hours from the hour rollups, the quarter-hours at its
 * ends from the quarter-hour rollups, and, where the report starts or ends between quarter-hours
 * (its `start_time` and `end_time` are any second), the raw rows of that part of a quarter-hour.
 * Where raw rows are gone (`ledger retain`), such a part is taken as its whole quarter-hour.
 * All times are Unix seconds.
 */

/** A report bucket: [start, end) and, for day buckets, its local date (yyyy-mm-dd). */
export interface PieceBucket {
  start: number
  end: number
  day: string
}

export type UsagePiece =
  | { bucket: number; kind: 'day'; day: string }
  | { bucket: number; kind: 'hours' | 'quarters' | 'rows'; from: number; until: number }

export interface PieceOptions {
  /** The report's range; buckets are cut to it. */
  startTime: number
  endTime: number
  /** Whether the buckets are local days. */
  byDay: boolean
  /** From when the day rollups hold whole days of the report's zone; Infinity when never. */
  daysFrom: number
  /** Raw rows created before this are gone; -Infinity when none were removed. */
  rawFrom: number
}

const quarterS = 15 * 60
const hourS = 60 * 60

const floorTo = (at: number, step: number) => Math.floor(at / step) * step
const ceilTo = (at: number, step: number) => Math.ceil(at / step) * step

export function usagePieces(buckets: readonly PieceBucket[], options: PieceOptions): UsagePiece[] {
  const pieces: UsagePiece[] = []
  for (const bucket of buckets) {
    const from = Math.max(bucket.start, options.startTime)
    const until = Math.min(bucket.end, options.endTime)
    if (from >= until) continue
    if (options.byDay && from === bucket.start && until === bucket.end && bucket.start >= options.daysFrom) {
      pieces.push({ bucket: bucket.start, kind: 'day', day: bucket.day })
      continue
    }
    const add = (kind: 'hours' | 'quarters' | 'rows', pieceFrom: number, pieceUntil: number) => {
      if (pieceFrom < pieceUntil) pieces.push({ bucket: bucket.start, kind, from: pieceFrom, until: pieceUntil })
    }
    // The part of a quarter-hour before the first boundary and after the last one: raw rows,
    // or the whole quarter-hour where they are gone.
    let firstQuarter = ceilTo(from, quarterS)
    let lastQuarter = Math.max(floorTo(until, quarterS), firstQuarter)
    if (firstQuarter > from && from < options.rawFrom) firstQuarter = floorTo(from, quarterS)
    else add('rows', from, Math.min(firstQuarter, until))
    if (lastQuarter < until && until <= options.rawFrom) lastQuarter = ceilTo(until, quarterS)
    else add('rows', lastQuarter, until)
    const firstHour = ceilTo(firstQuarter, hourS)
    const lastHour = Math.max(floorTo(lastQuarter, hourS), firstHour)
    add('quarters', firstQuarter, Math.min(firstHour, lastQuarter))
    add('hours', firstHour, lastHour)
    add('quarters', lastHour, lastQuarter)
  }
  return pieces
}

/** A span of Unix seconds, [from, until). */
export type Span = [from: number, until: number]

/** The pieces by source: spans of the hour and quarter-hour rollups and of raw rows, and days of the day rollups. */
export interface PieceSources {
  hours: Span[]
  quarters: Span[]
  rows: Span[]
  /** Local dates (yyyy-mm-dd). */
  days: string[]
}

/** The pieces of each source, adjacent spans joined (a report's whole hours are one span). */
export function piecesBySource(pieces: readonly UsagePiece[]): PieceSources {
  const sources: PieceSources = { hours: [], quarters: [], rows: [], days: [] }
  for (const piece of pieces) {
    if (piece.kind === 'day') {
      sources.days.push(piece.day)
      continue
    }
    const spans = sources[piece.kind]
    const last = spans.at(-1)
    if (last && last[1] === piece.from) last[1] = piece.until
    else spans.push([piece.from, piece.until])
  }
  return sources
}
