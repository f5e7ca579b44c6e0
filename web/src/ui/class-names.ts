/** The class attribute from parts, leaving out the false and empty ones. */
export function classNames(...parts: Array<string | false | null | undefined>): string {
  return parts.filter(Boolean).join(' ')
}
