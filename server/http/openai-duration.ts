/**
 * A duration as OpenAI writes its `x-ratelimit-reset-*` headers, which is Go's `time.Duration`
 * format: `0s`, `150ms`, `1s`, `17.2s`, `1m0s`, `6m30.5s`, `1h0m0s`. Whole milliseconds (a
 * fraction is rounded up, so a client that waits this long finds the place free).
 */
export function openAiDuration(ms: number): string {
  const whole = Math.ceil(ms)
  if (!(whole > 0)) return '0s'
  if (whole < 1_000) return `${whole}ms`
  const hours = Math.floor(whole / 3_600_000)
  const minutes = Math.floor((whole % 3_600_000) / 60_000)
  const secondsMs = whole % 60_000
  // Go prints the fraction of a second without trailing zeros.
  const seconds = secondsMs % 1_000 === 0 ? String(secondsMs / 1_000) : (secondsMs / 1_000).toFixed(3).replace(/0+$/, '')
  return `${hours > 0 ? `${hours}h` : ''}${hours > 0 || minutes > 0 ? `${minutes}m` : ''}${seconds}s`
}
