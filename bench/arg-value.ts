/** The value after the first of `names` on a command line (`--url http://...`), or undefined. */
export function argValue(args: string[], names: string[]): string | undefined {
  const index = args.findIndex((arg) => names.includes(arg))
  return index >= 0 ? args[index + 1] : undefined
}

/** A positive integer option (`--rounds 3`), or `fallback` when absent. */
export function integerArg(args: string[], name: string, fallback: number): number {
  const raw = argValue(args, [`--${name}`])
  const value = raw === undefined ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got ${raw}`)
  return value
}

/** `--postgres [URL]`: the server to run gateways on, or null for the embedded PGlite. */
export function postgresArg(args: string[]): string | null {
  if (!args.includes('--postgres')) return null
  const url = argValue(args, ['--postgres'])
  return url?.startsWith('postgres') ? url : 'postgres://postgres@127.0.0.1:5432/postgres'
}

/** `--redis [URL]`: the Redis to keep admission counters in, or null for the in-process store. */
export function redisArg(args: string[]): string | null {
  if (!args.includes('--redis')) return null
  const url = argValue(args, ['--redis'])
  return url?.startsWith('redis') ? url : 'redis://127.0.0.1:6379/10'
}
