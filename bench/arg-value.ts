/** The value after the first of `names` on a command line (`--url http://...`), or undefined. */
export function argValue(args: string[], names: string[]): string | undefined {
  const index = args.findIndex((arg) => names.includes(arg))
  return index >= 0 ? args[index + 1] : undefined
}
