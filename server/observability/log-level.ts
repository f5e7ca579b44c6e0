/** The levels LOG_LEVEL takes, most severe first: pino's, and `silent` for none. */
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

export type LogLevel = (typeof logLevels)[number]
