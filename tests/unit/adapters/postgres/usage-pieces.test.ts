import { describe, expect, test } from 'bun:test'
import { piecesBySource, usagePieces, type PieceOptions, type UsagePiece } from '../../../../server/adapters/postgres/usage-pieces'

const hour = 3_600
const quarter = 900
const day = 86_400

const options = (overrides: Partial<PieceOptions>): PieceOptions => ({ startTime: 0, endTime: 10 * day, byDay: false, daysFrom: -Infinity, rawFrom: -Infinity, ...overrides })
const spans = (pieces: UsagePiece[]) => pieces.map((piece) => (piece.kind === 'day' ? [piece.kind, piece.day] : [piece.kind, piece.from, piece.until]))

describe('usagePieces', () => {
  test('a whole day of a zone whose days are whole is one day piece', () => {
    const buckets = [{ start: day - 2 * hour, end: 2 * day - 2 * hour, day: '1970-01-02' }]

    expect(spans(usagePieces(buckets, options({ byDay: true })))).toEqual([['day', '1970-01-02']])
  })

  test('a day before its zone became whole, or cut by the range, is hours with quarter-hours at its ends', () => {
    // A day of UTC+5:30: from 18:30 to 18:30.
    const bucket = { start: day - 5.5 * hour, end: 2 * day - 5.5 * hour, day: '1970-01-02' }

    expect(spans(usagePieces([bucket], options({ byDay: true, daysFrom: 3 * day })))).toEqual([
      ['quarters', bucket.start, bucket.start + 2 * quarter],
      ['hours', bucket.start + 2 * quarter, bucket.end - 2 * quarter],
      ['quarters', bucket.end - 2 * quarter, bucket.end],
    ])
  })

  test("a range's start and end between quarter-hours are read from raw rows, or taken whole where they are gone", () => {
    const bucket = { start: 10 * hour, end: 11 * hour, day: '' }
    const cut = { startTime: 10 * hour + 7 * 60, endTime: 10 * hour + 50 * 60 }

    expect(spans(usagePieces([bucket], options(cut)))).toEqual([
      ['rows', cut.startTime, 10 * hour + quarter],
      ['rows', 10 * hour + 3 * quarter, cut.endTime],
      ['quarters', 10 * hour + quarter, 10 * hour + 3 * quarter],
    ])
    expect(spans(usagePieces([bucket], options({ ...cut, rawFrom: day })))).toEqual([['hours', 10 * hour, 11 * hour]])
  })

  test('for any range, the pieces of each bucket cover what the range holds of it, once', () => {
    let seed = 7
    const random = (below: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % below
    for (let round = 0; round < 500; round++) {
      const width = random(2) === 0 ? day : hour
      const offset = random(4 * 24) * quarter
      const buckets = Array.from({ length: 3 }, (_, n) => ({ start: offset + n * width, end: offset + (n + 1) * width, day: `d${n}` }))
      const startTime = offset + random(width * 2)
      const range = options({ startTime, endTime: startTime + 1 + random(width * 2), byDay: width === day, daysFrom: random(2) === 0 ? offset + width : Infinity, rawFrom: random(2) === 0 ? -Infinity : startTime + width })

      for (const bucket of buckets) {
        const from = Math.max(bucket.start, range.startTime)
        const until = Math.min(bucket.end, range.endTime)
        const mine = usagePieces(buckets, range).filter((piece) => piece.bucket === bucket.start)
        const covered = mine.flatMap((piece) => (piece.kind === 'day' ? [[bucket.start, bucket.end]] : [[piece.from, piece.until]])).sort((a, b) => a[0]! - b[0]!)
        for (const piece of mine) {
          if (piece.kind === 'hours') expect([piece.from % hour, piece.until % hour]).toEqual([0, 0])
          if (piece.kind === 'quarters') expect([piece.from % quarter, piece.until % quarter]).toEqual([0, 0])
          if (piece.kind === 'rows') expect([Math.floor(piece.from / quarter), piece.from >= range.rawFrom]).toEqual([Math.floor((piece.until - 1) / quarter), true])
        }
        for (let n = 1; n < covered.length; n++) expect(covered[n]![0]).toBe(covered[n - 1]![1]!)
        if (from < until) {
          // Where raw rows are gone, the ends reach out to whole quarter-hours.
          expect(covered[0]![0]).toBe(from >= range.rawFrom || from % quarter === 0 ? from : from - (from % quarter))
          expect(covered.at(-1)![1]).toBe(until > range.rawFrom || until % quarter === 0 ? until : until - (until % quarter) + quarter)
        } else expect(covered).toEqual([])
      }
    }
  })

  test('every time zone offset from 2020 to 2040 is a whole number of quarter-hours, which the rollups rest on', () => {
    const odd: string[] = []
    for (const timeZone of Intl.supportedValuesOf('timeZone')) {
      const format = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' })
      for (let month = 0; month < 12 * 21; month += 1) {
        const offset = format.formatToParts(Date.UTC(2020, month, 15)).find((part) => part.type === 'timeZoneName')!.value
        const [, minutes] = /^GMT(?:[+-]\d{2}:(\d{2}))?$/.exec(offset) ?? [offset, 'unparsed']
        if (minutes !== undefined && Number(minutes) % 15 !== 0) odd.push(`${timeZone} ${offset}`)
      }
    }

    expect(odd).toEqual([])
  })

  test("a report's pieces are read as a few spans of each source: adjacent ones joined", () => {
    const buckets = Array.from({ length: 3 }, (_, n) => ({ start: 10 * hour + n * hour, end: 11 * hour + n * hour, day: '' }))

    const sources = piecesBySource(usagePieces(buckets, options({ startTime: 10 * hour + 7 * 60, endTime: 13 * hour - 60 })))

    expect(sources).toEqual({
      rows: [[10 * hour + 7 * 60, 10 * hour + quarter], [12 * hour + 3 * quarter, 13 * hour - 60]],
      quarters: [[10 * hour + quarter, 11 * hour], [12 * hour, 12 * hour + 3 * quarter]],
      hours: [[11 * hour, 12 * hour]],
      days: [],
    })
  })
})
