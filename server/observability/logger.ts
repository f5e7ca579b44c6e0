import { inspect } from 'node:util'
import pino, { type Logger } from 'pino'
import type { LogLevel } from './log-level'

export type { Logger } from 'pino'

/** Where log lines go: whole lines, written in order. */
export interface LogOutput {
  write(text: string): void
  /** Resolves once everything written so far has left the process. */
  flush(): Promise<void>
}

/**
 * Standard output, buffered for one turn of the event loop: the lines of a turn are joined here and
 * leave in one write. Each line through pino's own destination (sonic-boom) cost 1.5 us here against
 * 0.1 through Bun's file sink; and the sink, given the lines one by one, wrote whenever it held 4 KiB,
 * on the thread that serves requests, several writes a turn under load. The gateway's other printing
 * (the listening line, mail printed without SMTP) goes through the same output, so that no line is
 * cut by another's.
 */
export function stdoutOutput(sink: Pick<Bun.FileSink, 'write' | 'flush'> = Bun.stdout.writer()): LogOutput {
  let pending: string[] = []
  const writePending = () => {
    if (pending.length === 0) return
    const text = pending.join('')
    pending = []
    sink.write(text)
    const flushed = sink.flush()
    // A pipe that is full takes the rest later; nothing waits for it here.
    if (flushed instanceof Promise) flushed.catch(() => {})
  }
  return {
    write(text) {
      if (pending.push(text) === 1) setImmediate(writePending)
    },
    async flush() {
      writePending()
      await sink.flush()
    },
  }
}

/** The gateway's logger: pino, JSON lines at `level` and above, errors through `loggableError`. */
export function createLogger(level: LogLevel, output: LogOutput): Logger {
  return pino({ level, serializers: { err: loggableError } }, { write: (line: string) => output.write(line) })
}

/** An error as a log line may show it. */
export interface LoggedError {
  type: string
  message: string
  code?: string
  stack?: string
}

/**
 * An error as it may be logged: its type, message, code and stack frames, and nothing else of it.
 * A failed statement's error (drizzle's) carries the SQL and its parameters, key and session hashes
 * among them, in its message and fields: only its cause's message and code are kept. Values that
 * are no errors are logged as their text.
 */
export function loggableError(error: unknown): LoggedError {
  if (!(error instanceof Error) && (typeof error !== 'object' || error === null)) return { type: typeof error, message: String(error) }
  const fields = error as { name?: unknown; message?: unknown; code?: unknown; query?: unknown; cause?: unknown; stack?: unknown }
  const type = typeof fields.name === 'string' ? fields.name : 'Error'
  const statementFailed = typeof fields.query === 'string' || (typeof fields.message === 'string' && fields.message.startsWith('Failed query:'))
  if (statementFailed) {
    const cause = fields.cause as { message?: unknown; code?: unknown } | undefined
    const message = `a database statement failed: ${typeof cause?.message === 'string' ? cause.message : 'no reason given'}`
    return { type, message, ...(typeof cause?.code === 'string' ? { code: cause.code } : {}) }
  }
  const message = typeof fields.message === 'string' ? fields.message : inspect(error, { depth: 1 })
  // The stack's first line repeats the message; the frames say where.
  const frames = typeof fields.stack === 'string' ? fields.stack.split('\n').filter((line) => line.startsWith('    at ')) : []
  return { type, message, ...(typeof fields.code === 'string' ? { code: fields.code } : {}), ...(frames.length > 0 ? { stack: frames.join('\n') } : {}) }
}

/** A `log` callback of the gateway's components, writing at `level`: the message, and the error under `err`. */
export function logAt(logger: Logger, level: 'info' | 'warn' | 'error' | 'fatal'): (message: string, error?: unknown) => void {
  return (message, error) => (error === undefined ? logger[level](message) : logger[level]({ err: error }, message))
}

/**
 * Sends what the gateway's modules print with `console` to `logger`, as events: `console.error` at
 * error, `warn` at warn, the others at info (`debug` at debug). An error among the arguments goes
 * under `err` (see `loggableError`), the rest makes the message.
 */
export function routeConsoleTo(logger: Logger): void {
  const bridge =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (...args: unknown[]): void => {
      if (!logger.isLevelEnabled(level)) return
      let err: unknown
      const parts: string[] = []
      for (const arg of args) {
        if (err === undefined && (arg instanceof Error || typeof (arg as { query?: unknown } | null)?.query === 'string')) err = arg
        else parts.push(typeof arg === 'string' ? arg : inspect(arg, { depth: 2, breakLength: Infinity }))
      }
      if (err === undefined) logger[level](parts.join(' '))
      else logger[level]({ err }, parts.join(' '))
    }
  console.log = bridge('info')
  console.info = bridge('info')
  console.warn = bridge('warn')
  console.error = bridge('error')
  console.debug = bridge('debug')
}
