/** The command line was wrong: the CLI prints the message and exits with status 2. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** The command could not be carried out: the CLI prints the message and exits with status 1. */
export class CliError extends Error {
  override name = 'CliError'
}
