/**
 * Incremental decoder of a server-sent event stream: bytes in, the `data` of each complete event out.
 * Bytes may be split anywhere (inside a UTF-8 sequence, between `\r` and `\n`); lines end in `\n`,
 * `\r\n` or `\r`; comment lines and fields other than `data` are ignored.
 */
export class SseDecoder {
  private readonly text = new TextDecoder()
  private pending = ''
  /** The data lines of the event being read, joined; null before its first. */
  private data: string | null = null
  /** The previous read ended in `\r`: a `\n` starting the next one belongs to that line end. */
  private skipLineFeed = false

  /** Feeds bytes; returns the data of every event they complete, in order. */
  push(bytes: Uint8Array): string[] {
    return this.consume(this.text.decode(bytes, { stream: true }), false)
  }

  /** Characters held for an event not complete yet: its data lines and the line being read. */
  get buffered(): number {
    return this.pending.length + (this.data?.length ?? 0)
  }

  /** Ends the stream; an event cut off by the end is still returned when it has data. */
  end(): string[] {
    return this.consume(this.text.decode(), true)
  }

  private consume(decoded: string, atEnd: boolean): string[] {
    let input = decoded
    if (this.skipLineFeed && input.length > 0) {
      if (input.charCodeAt(0) === 10) input = input.slice(1)
      this.skipLineFeed = false
    }
    const text = this.pending === '' ? input : this.pending + input
    const events: string[] = []
    let lineStart = 0
    // Line ends are found with indexOf (a scan in native code): a stream's text was scanned a
    // character at a time before, the dearest part of reading it. What was pending holds no line
    // end: the search starts after it, so that a long line arriving in many reads is not searched
    // again at each. A \r is looked for only while the text has one.
    const from = this.pending.length
    let lineFeed = text.indexOf('\n', from)
    let carriageReturn = text.indexOf('\r', from)
    while (lineFeed !== -1 || carriageReturn !== -1) {
      const atCarriageReturn = carriageReturn !== -1 && (lineFeed === -1 || carriageReturn < lineFeed)
      const end = atCarriageReturn ? carriageReturn : lineFeed
      this.acceptLine(text.slice(lineStart, end), events)
      lineStart = end + 1
      if (atCarriageReturn) {
        if (lineStart < text.length) {
          if (text.charCodeAt(lineStart) === 10) lineStart++
        } else {
          this.skipLineFeed = true
        }
        carriageReturn = text.indexOf('\r', lineStart)
      }
      if (lineFeed !== -1 && lineFeed < lineStart) lineFeed = text.indexOf('\n', lineStart)
    }
    this.pending = lineStart === 0 ? text : text.slice(lineStart)
    if (atEnd) {
      if (this.pending !== '') this.acceptLine(this.pending, events)
      this.pending = ''
      this.acceptLine('', events)
    }
    return events
  }

  private acceptLine(line: string, events: string[]): void {
    if (line === '') {
      if (this.data !== null) {
        events.push(this.data)
        this.data = null
      }
      return
    }
    let value: string
    if (line.startsWith('data:')) value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
    else if (line === 'data') value = ''
    // A comment (from ':'), or a field other than data.
    else return
    this.data = this.data === null ? value : `${this.data}\n${value}`
  }
}
